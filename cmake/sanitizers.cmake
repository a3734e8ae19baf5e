# Sanitizer and fuzzer builds (README.md, "Tests"), each in a build folder of its own; included
# by the top-level CMakeLists.txt before any target. Both flags apply to every target, so the
# libraries are instrumented as well as the programs.
#   OPTPIPE_SANITIZE=address,undefined  ASan + UBSan (scripts/test.sh --sanitize, build-asan/)
#   OPTPIPE_SANITIZE=thread             TSan (scripts/test.sh --sanitize=thread, build-tsan/)
#   OPTPIPE_FUZZ=ON                     the libFuzzer targets of fuzz/ with ASan + UBSan, clang
#                                       only (scripts/fuzz.sh, build-fuzz/)
# UBSan stops at its first report (-fno-sanitize-recover), so a finding fails the test or the
# fuzz run instead of scrolling past. CUDA must be off in these builds (nvcc knows none of it).
set(OPTPIPE_SANITIZE "" CACHE STRING "Build with these sanitizers: address,undefined or thread (empty: none)")
option(OPTPIPE_FUZZ "Build the libFuzzer targets of the file readers (fuzz/; clang only)" OFF)

if(OPTPIPE_FUZZ AND NOT OPTPIPE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "optpipe: OPTPIPE_FUZZ brings its own sanitizers (address,undefined); leave OPTPIPE_SANITIZE empty")
endif()
if(OPTPIPE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "optpipe: OPTPIPE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                      "configure with -DCMAKE_CXX_COMPILER=clang++ (scripts/fuzz.sh does)")
endif()

set(optpipe_sanitizers "${OPTPIPE_SANITIZE}")
if(OPTPIPE_FUZZ)
  set(optpipe_sanitizers "address,undefined")
endif()
if(NOT optpipe_sanitizers STREQUAL "")
  if(NOT optpipe_sanitizers MATCHES "^(address|undefined|thread)(,(address|undefined|thread))*$")
    message(FATAL_ERROR "optpipe: OPTPIPE_SANITIZE=${optpipe_sanitizers}: give address, undefined and/or thread")
  endif()
  if(optpipe_sanitizers MATCHES "thread" AND optpipe_sanitizers MATCHES "address")
    message(FATAL_ERROR "optpipe: ThreadSanitizer and AddressSanitizer cannot be combined: build them in two folders")
  endif()
  if(OPTPIPE_ENABLE_CUDA)
    message(FATAL_ERROR "optpipe: sanitizer builds need -DOPTPIPE_ENABLE_CUDA=OFF")
  endif()
  set(optpipe_sanitize_flags -fsanitize=${optpipe_sanitizers} -fno-omit-frame-pointer -g)
  if(optpipe_sanitizers MATCHES "undefined")
    list(APPEND optpipe_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  if(OPTPIPE_FUZZ)
    # The libraries get the fuzzer's coverage instrumentation; the targets link libFuzzer
    # itself (-fsanitize=fuzzer, fuzz/CMakeLists.txt).
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
  add_compile_options(${optpipe_sanitize_flags})
  add_link_options(-fsanitize=${optpipe_sanitizers})
  message(STATUS "optpipe: sanitizers ${optpipe_sanitizers}")
endif()
