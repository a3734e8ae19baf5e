// Times as people read them in messages and reports: "12.345 ms". One formatter for every layer
// (the model's messages, the cache's, the reports of viz/, partition/ and frontier/).
#pragma once

#include <string>

namespace optpipe {

// "%.3f ms"; "-" for a value that is not finite (no schedule, or a makespan of inf from absurd
// inputs): never "inf ms" (issue 23).
std::string fmt_ms(double ms);

}  // namespace optpipe
