#include "profiler/chrome_trace.h"
namespace memprof {
nlohmann::ordered_json ChromeTraceJson(const RunView&) { return {}; }  // WIP
}  // namespace memprof
