// What every command's flag parsing shares (Boost.Program_options): parsing
// with errors that name the command's --help, required flags, and the
// check flags of `memprof check` and `profile --check`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "profiler/base/errors.h"
#include "profiler/gate/gate_run.h"

namespace memprof {

// The check flags as given; ApplyGateWords turns them into CheckOptions.
struct GateWords {
  std::vector<std::string> tolerances;
  int64_t tolerance_bytes = 0;
};

boost::program_options::options_description GateFlags(CheckOptions& o,
                                                      GateWords& w);

// Whether `name` was given (not defaulted).
bool Given(const boost::program_options::variables_map& vm, const char* name);

// "KEY=VALUE" -> (KEY, tolerance); throws InputError naming the flag.
std::pair<std::string, Tolerance> KeyedTolerance(const std::string& text);

// --tolerance and --tolerance-bytes into `options.tolerances`; InputError
// naming the flag, also for an empty --markdown or --json path.
void ApplyGateWords(const GateWords& w,
                    const boost::program_options::variables_map& vm,
                    CheckOptions& options);

// Every command's flag style: Boost's default without prefix guessing, so a
// flag is taken only as written in full (--micro is not --micro-batch).
int FlagStyle();

// The names of `options` that `name` begins, or is within two edits of
// (a letter or two mistyped), each after `prefix`, joined by " or "; "" when
// none is.
std::string CloseNames(
    const std::string& name,
    const boost::program_options::options_description& options,
    const std::string& prefix);

// InputError "unknown flag '--micro'; did you mean --micro-batch? run ..."
// (CloseNames of the unknown name are suggested).
InputError UnknownFlag(const boost::program_options::unknown_option& e,
                       const boost::program_options::options_description& flags,
                       const std::string& command);

// Parses `words` against `flags` in FlagStyle(). A flag whose value is the
// next flag ("--hf-config --config x.ini": its value forgotten) is an
// InputError naming both; Boost's own errors are thrown as they are.
boost::program_options::parsed_options ParseCommandLine(
    const std::vector<std::string>& words,
    const boost::program_options::options_description& flags);

// Parses `words` against `flags`; errors name the command's --help.
boost::program_options::variables_map ParseFlags(
    const std::vector<std::string>& words,
    const boost::program_options::options_description& flags,
    const std::string& command);

// With --help given: `help` becomes "USAGE\n\nFLAGS" and the result is
// true. Otherwise false, `help` untouched.
bool HelpRequested(const boost::program_options::variables_map& vm,
                   const std::string& usage,
                   const boost::program_options::options_description& flags,
                   std::string& help);

// InputError "COMMAND: --FLAG WHAT is required" unless the flag is given and
// not empty.
void Require(const boost::program_options::variables_map& vm, const char* flag,
             const std::string& command, const std::string& what);

}  // namespace memprof
