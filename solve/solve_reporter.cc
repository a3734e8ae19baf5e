#include "solve/solve_reporter.h"

#include <spdlog/spdlog.h>

namespace optpipe {

void SolveReporter::on_warning(const std::string& message) { spdlog::warn("{}", message); }

}  // namespace optpipe
