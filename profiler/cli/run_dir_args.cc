// The flags of the commands that read a run directory: check, baseline,
// report (declared in config_cli.h).
#include <boost/program_options.hpp>

#include "profiler/base/errors.h"
#include "profiler/cli/config_cli.h"
#include "profiler/cli/flag_parsing.h"

namespace memprof {
namespace po = boost::program_options;

CheckArgs ParseCheckArgs(const std::vector<std::string>& words) {
  CheckArgs args;
  GateWords gate;
  po::options_description flags("Options");
  flags.add_options()("help,h", "print this help")(
      "baseline", po::value(&args.check.baseline_path),
      "baseline file (memprof.baseline/1)")(
      "run", po::value(&args.run_dir),
      "run directory: the --out of memprof profile");
  flags.add(GateFlags(args.check, gate));
  const po::variables_map vm = ParseFlags(words, flags, "check");
  if (HelpRequested(vm,
                    "usage: memprof check --baseline FILE --run DIR "
                    "[--tolerance 1%] [--tolerance KEY=VALUE ...] [--markdown "
                    "FILE] [--strict]\n"
                    "exit codes: 0 within tolerance, 1 regressed (or improved "
                    "with --strict), 2 bad input or context mismatch, 3 the "
                    "run failed (out of memory, killed, steps cut short)",
                    flags, args.help_text)) {
    args.help = true;
    return args;
  }
  Require(vm, "baseline", "check", "FILE");
  Require(vm, "run", "check", "DIR");
  ApplyGateWords(gate, vm, args.check);
  return args;
}

BaselineArgs ParseBaselineArgs(const std::vector<std::string>& words) {
  BaselineArgs args;
  std::vector<std::string> tolerances;
  po::options_description flags("Options");
  flags.add_options()("help,h", "print this help")(
      "run", po::value(&args.run_dir),
      "run directory: the --out of memprof profile")(
      "out", po::value(&args.out_path), "baseline file to write")(
      "tolerance", po::value(&tolerances)->composing(),
      "KEY=P% or KEY=N (bytes): a tolerance kept in the baseline; "
      "repeatable");
  const po::variables_map vm = ParseFlags(words, flags, "baseline");
  if (HelpRequested(vm,
                    "usage: memprof baseline --run DIR --out FILE "
                    "[--tolerance KEY=VALUE ...]\n"
                    "exit codes: 0 written, 2 bad input, 3 the run failed "
                    "(out of memory, killed, steps cut short): not kept",
                    flags, args.help_text)) {
    args.help = true;
    return args;
  }
  Require(vm, "run", "baseline", "DIR");
  Require(vm, "out", "baseline", "FILE");
  for (const std::string& text : tolerances) {
    if (text.find('=') == std::string::npos) {
      throw InputError("--tolerance " + text +
                       ": a baseline keeps tolerances per key; write "
                       "KEY=VALUE, e.g. activations=2%");
    }
    const auto [key, tolerance] = KeyedTolerance(text);
    args.tolerances[key] = tolerance;
  }
  return args;
}

ReportArgs ParseReportArgs(const std::vector<std::string>& words) {
  ReportArgs args;
  po::options_description flags("Options");
  flags.add_options()("help,h", "print this help")(
      "run", po::value(&args.run_dir),
      "run directory: the --out of memprof profile (or a copy of its "
      "rank-<r>.json files)");
  const po::variables_map vm = ParseFlags(words, flags, "report");
  if (HelpRequested(vm,
                    "usage: memprof report --run DIR\n\n"
                    "Renders DIR/report.md, report.html and trace.json again "
                    "from DIR/rank-<r>.json alone.",
                    flags, args.help_text)) {
    args.help = true;
    return args;
  }
  Require(vm, "run", "report", "DIR");
  return args;
}

}  // namespace memprof
