#include "cli/build_info.h"

#include "optpipe_build_id.h"  // generated (cmake/build_id.cmake)

#ifndef OPTPIPE_VERSION
#define OPTPIPE_VERSION "0.0.0"
#endif

namespace optpipe::cli {

std::string version_string() { return std::string("optpipe ") + OPTPIPE_VERSION + " (" + OPTPIPE_BUILD_ID + ")"; }

}  // namespace optpipe::cli
