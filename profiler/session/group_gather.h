// Strings gathered across a c10d process group (the program's own, or
// memprof's): rank 0 collects every rank's report this way, so that the
// summary needs no shared filesystem.
#pragma once

#include <string>
#include <vector>

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace memprof {

// Collective: every rank's `value`, in rank order. Host tensors: the group
// needs a backend for CPU tensors (Gloo).
std::vector<std::string> AllGatherStrings(c10d::ProcessGroup& group,
                                          const std::string& value);

}  // namespace memprof
