// What this build is: "optpipe VERSION (BUILD)", BUILD the git commit it was built from, with
// "-dirty" for uncommitted changes, or "unknown" (cmake/build_id.cmake). `optpipe --version`
// prints it and the schedule cache records it with every entry.
#pragma once

#include <string>

namespace optpipe::cli {

std::string version_string();

}  // namespace optpipe::cli
