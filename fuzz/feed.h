// The file readers under the fuzzer: one feed function per reader, each defined in its own
// <reader>_fuzz.cc beside this header.
//
// A feed takes arbitrary bytes, gives them to its reader and, when the reader accepts them,
// checks what it returned (a round trip through the writer gives the same value, and so on).
// Its contract is the readers' own: for any input it returns normally or throws InputError
// (the reader refused the input, with a message). Anything else is a bug: another exception
// (FeedBug when a check of the result fails), a crash, a sanitizer report, a hang, or an
// absurd allocation.
//
// Two users: the libFuzzer targets (fuzz/CMakeLists.txt, -DOPTPIPE_FUZZ=ON, clang only; each
// <reader>_fuzz.cc compiled with OPTPIPE_FUZZ_TARGET defines LLVMFuzzerTestOneInput), run by
// scripts/fuzz.sh; and tests/fuzz_corpus_test.cc, which runs every file of the committed corpus
// (tests/fuzz/corpus/<reader>/: seeds and the inputs of past findings) through the same feeds
// in the normal test suite, and so under ASan/UBSan in `scripts/test.sh --sanitize`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace optpipe::fuzz {

// A reader accepted an input but what it returned fails a check (the message says which).
class FeedBug : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

void feed_instance(std::string_view bytes);     // model/instance_io.h parse_instance
void feed_schedule(std::string_view bytes);     // model/schedule_io.h parse_schedule
void feed_torch_csv(std::string_view bytes);    // model/torch_csv.h from_torch_csv
void feed_cache_import(std::string_view bytes); // cache/cache_transfer.h read_entries

struct Reader {
  const char* name;  // the corpus folder: tests/fuzz/corpus/<name>/
  void (*feed)(std::string_view);
};
inline constexpr Reader kReaders[] = {
    {"instance", feed_instance},
    {"schedule", feed_schedule},
    {"torch_csv", feed_torch_csv},
    {"cache_import", feed_cache_import},
};

}  // namespace optpipe::fuzz

// The body of each fuzz target: the feed, with the readers' refusals (InputError) as the normal
// outcome; anything else escapes, and libFuzzer reports it as a crash.
#ifdef OPTPIPE_FUZZ_TARGET
#include "model/error.h"
#define OPTPIPE_FUZZ_ENTRY(feed)                                                     \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    try {                                                                            \
      feed(std::string_view(reinterpret_cast<const char*>(data), size));            \
    } catch (const optpipe::InputError&) {                                           \
    }                                                                                \
    return 0;                                                                        \
  }
#else
#define OPTPIPE_FUZZ_ENTRY(feed)
#endif
