// The fuzz corpus through the readers (issue 20): every file of tests/fuzz/corpus/<reader>/ (the
// seeds and the inputs of past findings) goes through that reader's fuzz feed (fuzz/feed.h, the
// same code the libFuzzer targets run), which must return or throw InputError, nothing else. In
// the Release suite this checks the contract; in `scripts/test.sh --sanitize` (ASan + UBSan) it
// replays the corpus under the sanitizers the fuzzer ran with.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/feed.h"
#include "model/error.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus_files(const std::string& reader) {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / reader;
  if (fs::is_directory(dir)) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class FuzzCorpus : public ::testing::TestWithParam<Reader> {};

TEST_P(FuzzCorpus, EveryFileGivesAValueOrAnInputError) {
  const Reader& reader = GetParam();
  const std::vector<fs::path> files = corpus_files(reader.name);
  // Seeds the reader accepts and findings it refuses: both kinds must be there.
  ASSERT_GE(files.size(), 3u) << "tests/fuzz/corpus/" << reader.name << "/ is missing or nearly empty";
  int accepted = 0, refused = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    const std::string bytes = test_support::read_text(file.string());
    try {
      reader.feed(bytes);
      ++accepted;
    } catch (const InputError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()), "") << "an InputError without a message";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "neither a value nor an InputError: " << e.what();
    }
  }
  EXPECT_GT(accepted, 0) << "no file of the corpus is accepted: the seeds no longer read";
  std::printf("[ corpus   ] %s: %zu files, %d accepted, %d refused\n", reader.name, files.size(), accepted, refused);
}

INSTANTIATE_TEST_SUITE_P(Readers, FuzzCorpus, ::testing::ValuesIn(kReaders),
                         [](const ::testing::TestParamInfo<Reader>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace optpipe::fuzz
