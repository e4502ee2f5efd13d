#include "profiler/cli/flag_parsing.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "profiler/base/errors.h"

namespace memprof {
namespace po = boost::program_options;
// "KEY=VALUE" -> (KEY, tolerance); throws InputError naming the flag.
std::pair<std::string, Tolerance> KeyedTolerance(const std::string& text) {
  const size_t equals = text.find('=');
  const std::string key = text.substr(0, equals);
  try {
    RequireToleranceKey(key);
    return {key, ParseTolerance(text.substr(equals + 1))};
  } catch (const InputError& e) {
    throw InputError("--tolerance " + text + ": " + e.what());
  }
}

po::options_description GateFlags(CheckOptions& o, GateWords& w) {
  po::options_description flags("Check options");
  flags.add_options()(
      "tolerance", po::value(&w.tolerances)->composing(),
      "P% replaces the 1% of activations, temporaries and peak; KEY=P% or "
      "KEY=N (bytes) sets one key (a category or peak); repeatable")(
      "tolerance-bytes", po::value(&w.tolerance_bytes),
      "N bytes of slack for activations, temporaries and peak")(
      "markdown", po::value(&o.markdown_path),
      "write the result table as Markdown to FILE")(
      "json", po::value(&o.json_path),
      "write the result as JSON (memprof.check/1) to FILE")(
      "strict", po::bool_switch(&o.strict),
      "improvements beyond tolerance fail the check too")(
      "only-changed", po::bool_switch(&o.only_changed),
      "list only the regressed and improved figures (the table and "
      "--markdown); the rest is counted in one line")(
      "allow-config-change", po::bool_switch(&o.allow_config_change),
      "gate a run whose config differs from the baseline's instead of "
      "refusing it (world size, device, dtype and libtorch must match)");
  return flags;
}

bool HelpRequested(const po::variables_map& vm, const std::string& usage,
                   const po::options_description& flags, std::string& help) {
  if (vm.count("help") == 0) return false;
  std::ostringstream text;
  text << usage << "\n\n" << flags;
  help = text.str();
  return true;
}

bool Given(const po::variables_map& vm, const char* name) {
  return vm.count(name) > 0 && !vm[name].defaulted();
}

void ApplyGateWords(const GateWords& w, const po::variables_map& vm,
                    CheckOptions& options) {
  for (const char* flag : {"markdown", "json"}) {
    if (vm.count(flag) > 0 && vm[flag].as<std::string>().empty()) {
      throw InputError(std::string("--") + flag +
                       ": an empty path; give a file's path, or leave the "
                       "flag out");
    }
  }
  ToleranceSettings& settings = options.tolerances;
  for (const std::string& text : w.tolerances) {
    if (text.find('=') != std::string::npos) {
      const auto [key, tolerance] = KeyedTolerance(text);
      settings.per_key[key] = tolerance;
      continue;
    }
    Tolerance tolerance;
    try {
      tolerance = ParseTolerance(text);
    } catch (const InputError& e) {
      throw InputError("--tolerance " + text + ": " + e.what());
    }
    if (text.back() != '%') {
      throw InputError("--tolerance " + text +
                       ": a tolerance without a key is a percentage (e.g. "
                       "2%); for bytes use --tolerance-bytes " +
                       text + " or --tolerance KEY=" + text);
    }
    if (settings.percent) {
      throw InputError("--tolerance " + text +
                       ": a tolerance without a key given twice; give it once");
    }
    settings.percent = tolerance.percent;
  }
  if (Given(vm, "tolerance-bytes")) {
    if (w.tolerance_bytes < 0) {
      throw InputError("--tolerance-bytes must be 0 or more, got " +
                       std::to_string(w.tolerance_bytes));
    }
    settings.bytes = w.tolerance_bytes;
  }
}

int FlagStyle() {
  return po::command_line_style::default_style &
         ~po::command_line_style::allow_guessing;
}

// The edit distance between `a` and `b` (insertions, deletions and
// substitutions), for "did you mean" on a mistyped flag.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string CloseNames(const std::string& name,
                       const po::options_description& options,
                       const std::string& prefix) {
  std::string matches;
  for (const auto& option : options.options()) {
    const std::string& known = option->long_name();
    // A prefix of the name, or the name mistyped by a letter or two.
    if (!name.empty() &&
        (known.rfind(name, 0) == 0 ||
         (name.size() > 3 && EditDistance(name, known) <= 2))) {
      matches += (matches.empty() ? "" : " or ") + (prefix + known);
    }
  }
  return matches;
}

InputError UnknownFlag(const po::unknown_option& e,
                       const po::options_description& flags,
                       const std::string& command) {
  const std::string given = e.get_option_name();
  const std::string matches =
      CloseNames(given.substr(given.find_first_not_of('-')), flags, "--");
  return InputError(
      "unknown flag '" + given + "'" +
      (matches.empty() ? "; run" : "; did you mean " + matches + "? Run") +
      " 'memprof " + command + " --help' for the list");
}

po::parsed_options ParseCommandLine(const std::vector<std::string>& words,
                                    const po::options_description& flags) {
  po::parsed_options parsed =
      po::command_line_parser(words).options(flags).style(FlagStyle()).run();
  for (const po::option& option : parsed.options) {
    if (option.position_key >= 0) {
      // A word with no flag before it: memprof's commands take flags only
      // ('--strict yes', a switch given a value, ran as --strict).
      const std::string word =
          option.value.empty() ? option.string_key : option.value.front();
      throw InputError("unexpected argument '" + word +
                       "': every argument is a --flag or a flag's value (a "
                       "switch such as --strict or --quiet takes none)");
    }
    for (const std::string& value : option.value) {
      if (value.rfind("--", 0) != 0) continue;
      throw InputError("--" + option.string_key + " took the next flag, '" +
                       value + "', as its value: give --" + option.string_key +
                       " its value (--" + option.string_key +
                       " VALUE) before the next flag");
    }
  }
  return parsed;
}

// Parses `words` against `flags`; errors name the command's --help.
po::variables_map ParseFlags(const std::vector<std::string>& words,
                             const po::options_description& flags,
                             const std::string& command) {
  po::variables_map vm;
  try {
    po::store(ParseCommandLine(words, flags), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    throw UnknownFlag(e, flags, command);
  } catch (const po::error& e) {
    throw InputError(command + ": " + e.what() + "; run 'memprof " + command +
                     " --help'");
  }
  return vm;
}

void Require(const po::variables_map& vm, const char* flag,
             const std::string& command, const std::string& what) {
  if (!vm.count(flag) || vm[flag].as<std::string>().empty()) {
    throw InputError(command + ": --" + flag + " " + what +
                     " is required; run 'memprof " + command + " --help'");
  }
}

}  // namespace memprof
