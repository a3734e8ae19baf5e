// Whether this test program was built with sanitizers (scripts/test.sh --sanitize, which sets
// OPTPIPE_SANITIZE; tests/CMakeLists.txt passes it on as OPTPIPE_SANITIZED), and a skip for the
// few tests that measure what the sanitizers change: resident memory (ASan's shadow memory) or
// work done within a wall-time budget (every instrumented thread runs several times slower).
// The skip prints its reason; in the normal build these tests run as always.
#pragma once

#include <gtest/gtest.h>

namespace optpipe::test_support {

#ifdef OPTPIPE_SANITIZED
inline constexpr const char* kSanitized = OPTPIPE_SANITIZED;
#else
inline constexpr const char* kSanitized = nullptr;
#endif

}  // namespace optpipe::test_support

#define SKIP_UNDER_SANITIZERS(why)                                                                 \
  if (::optpipe::test_support::kSanitized != nullptr)                                               \
  GTEST_SKIP() << "built with -fsanitize=" << ::optpipe::test_support::kSanitized << ": " << (why)
