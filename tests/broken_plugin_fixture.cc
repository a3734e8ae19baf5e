// Test fixtures for tests/plugins_test.cc, built three times (tests/CMakeLists.txt):
//   OPTPIPE_FIXTURE_NEEDED   a library, put where no search path leads;
//   (nothing)                a plugin that needs it, so that dlopen fails on the missing library,
//                            as a CUDA plugin does on a machine without libcudart;
//   OPTPIPE_FIXTURE_FOREIGN  a CUDA plugin from another build: the entry point is there, the
//                            ABI tag is not this build's.
#if defined(OPTPIPE_FIXTURE_NEEDED)
int optpipe_fixture_needed() { return 1; }
#elif defined(OPTPIPE_FIXTURE_FOREIGN)
namespace {
struct Head {  // the first members of every plugin table (plugins/cuda_plugin.h)
  int version;
  const char* abi;
};
const Head head = {1, "optpipe 0.0.1, another compiler"};
}  // namespace
extern "C" const void* optpipe_cuda_plugin_v1() { return &head; }
#else
int optpipe_fixture_needed();
extern "C" int optpipe_fixture_plugin() { return optpipe_fixture_needed(); }
#endif
