#include "profiler/gate/baseline_search.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "profiler/base/errors.h"
#include "profiler/base/regular_file.h"

namespace memprof {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;

// config[section][key] as text, or "" when absent.
std::string Leaf(const Json& config, const char* section, const char* key) {
  if (!config.is_object() || !config.contains(section)) return "";
  const Json& s = config[section];
  if (!s.is_object() || !s.contains(key)) return "";
  const Json& value = s[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// `text` with each character a file name should not hold (a space, a
// slash, quotes, parentheses) replaced by '-', and '-' runs squeezed.
std::string FileNameSafe(const std::string& text) {
  std::string safe;
  for (const char c : text) {
    const bool kept = std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                      c == '_' || c == '-';
    if (kept) {
      safe += c;
    } else if (!safe.empty() && safe.back() != '-') {
      safe += '-';
    }
  }
  while (!safe.empty() && (safe.back() == '-' || safe.back() == '.')) {
    safe.pop_back();
  }
  return safe;
}

}  // namespace

std::vector<std::string> FindBaselines(
    const std::string& dir,
    const std::function<bool(const RunContext&)>& matches) {
  std::vector<std::string> found;
  std::error_code error;
  fs::directory_iterator it(dir.empty() ? "." : dir, error);
  int read = 0;
  for (;
       !error && it != fs::directory_iterator() && read < kMaxSearchedBaselines;
       it.increment(error)) {
    const fs::path& path = it->path();
    if (path.extension() != ".json" || !it->is_regular_file(error)) continue;
    ++read;
    try {
      const std::string name = path.string();
      const Baseline baseline = ParseBaseline(
          ReadRegularFile(name, "baseline", kMaxSearchedBaselineBytes, ""),
          name);
      if (matches(baseline.run.context)) found.push_back(name);
    } catch (const InputError&) {
      // Not a baseline (or not one memprof can read): not a candidate.
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string BaselineFileName(const RunContext& context) {
  const Json& config = context.config;
  const auto text = [&config](const char* key) {
    return config.is_object() && config.contains(key) && config[key].is_string()
               ? config[key].get<std::string>()
               : std::string();
  };
  const std::string model = text("model");
  std::string stem;
  if (model == "program") {  // a program's source is no file: its name
    stem = Leaf(config, "program", "name");
  } else if (!text("source").empty()) {
    stem = fs::path(text("source")).stem().string();
  }
  if (stem.empty()) stem = model;
  stem = FileNameSafe(stem);
  if (stem.empty()) stem = "run";
  std::string name = stem + "-ws" + std::to_string(context.world_size);
  const std::string zero = Leaf(config, "ddp", "zero_stage");
  if (!zero.empty() && zero != "0") name += "-zero" + zero;
  if (!context.dtype.empty() && context.dtype != "float32") {
    name += "-" + context.dtype;
  }
  if (Leaf(config, "train", "activation_checkpointing") == "blocks") {
    name += "-checkpointed";
  }
  return name + ".json";
}

}  // namespace memprof
