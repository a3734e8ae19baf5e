// Test fixture for tests/plugins_test.cc: a plugin whose own dependency cannot be found, as a
// CUDA plugin is on a machine without libcudart. Built twice (tests/CMakeLists.txt): as the
// library it needs (OPTPIPE_FIXTURE_NEEDED, put where no search path leads) and as the plugin.
#ifdef OPTPIPE_FIXTURE_NEEDED
int optpipe_fixture_needed() { return 1; }
#else
int optpipe_fixture_needed();
extern "C" int optpipe_fixture_plugin() { return optpipe_fixture_needed(); }
#endif
