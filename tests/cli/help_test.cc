// Every command's --help against the config key table (Note [Config key
// table]): each key with its default and choices, as the parser takes
// them; `memprof help [COMMAND]`.
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/base/config_keys.h"
#include "profiler/base/errors.h"
#include "profiler/cli/config_cli.h"
#include "tests/run_command.h"

namespace memprof {
namespace {

using HelpOf = std::function<std::string()>;

// The commands that take a config, and their --help.
std::map<std::string, HelpOf> ConfigCommands() {
  return {
      {"profile", [] { return ParseProfileArgs({"--help"}).help_text; }},
      {"predict", [] { return ParsePredictArgs({"--help"}).help_text; }},
      {"fit", [] { return ParseFitArgs({"--help"}).help_text; }},
      {"sweep", [] { return ParseSweepArgs({"--help"}).help_text; }},
  };
}

// Each "--name" of `help` -> its entry (the value's placeholder and the
// description, wrapped lines joined by single spaces).
std::map<std::string, std::string> Entries(const std::string& help) {
  std::map<std::string, std::string> entries;
  const std::regex option("^  (-[a-z], )?--([a-z_.-]+) ?(.*)$");
  std::string current;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, option)) {
      current = m[2];
      entries[current] = m[3];
    } else if (!current.empty() && !line.empty() && line[0] == ' ') {
      entries[current] += " " + line;
    } else {
      current.clear();
    }
  }
  for (auto& [name, text] : entries) {
    text = std::regex_replace(text, std::regex(" +"), " ");
  }
  return entries;
}

TEST(Help, EveryConfigKeyWithItsDefaultAndChoicesOnEveryCommand) {
  for (const auto& [command, help_of] : ConfigCommands()) {
    const std::string help = help_of();
    const std::map<std::string, std::string> entries = Entries(help);
    for (const ConfigKey& key : ConfigKeyTable()) {
      const auto entry = entries.find(key.name);
      ASSERT_NE(entry, entries.end())
          << command << ": no --" << key.name << " in\n"
          << help;
      const std::string& text = entry->second;
      EXPECT_EQ(text.rfind(ConfigValueName(key) + " ", 0), 0u)
          << command << " --" << key.name << ": " << text;
      EXPECT_NE(text.find("default: " + ConfigDefaultText(key)),
                std::string::npos)
          << command << " --" << key.name << ": " << text;
      if (!key.choices.empty()) {
        EXPECT_NE(text.find("choices: " + ConfigChoicesText(key)),
                  std::string::npos)
            << command << " --" << key.name << ": " << text;
      }
    }
    // And no key that the table does not hold: the section lists exactly
    // the table's keys.
    int listed = 0;
    for (const auto& [name, text] : entries) {
      if (name.find('.') != std::string::npos || name == "model") {
        EXPECT_NE(FindConfigKey(name), nullptr) << command << ": --" << name;
        ++listed;
      }
    }
    EXPECT_EQ(listed, static_cast<int>(ConfigKeyTable().size())) << command;
  }
}

// A GPT run of two ranks with every size key given: each key's choices
// can be tried on it.
std::vector<std::string> GptWords() {
  return {"--model",       "gpt", "--gpt.layers",  "1", "--gpt.d_model", "8",
          "--gpt.heads",   "2",   "--gpt.seq_len", "4", "--gpt.vocab",   "16",
          "--micro-batch", "2",   "--world-size",  "2"};
}

// The defaults --help prints are the values the parser gives a key that
// is not set.
TEST(Help, PrintedDefaultsAreTheParsersDefaults) {
  std::vector<std::string> words = GptWords();
  words.resize(words.size() - 2);  // without --world-size
  const RunConfig parsed = ParsePredictArgs(words).config;
  for (const ConfigKey& key : ConfigKeyTable()) {
    if (key.default_text[0] != '\0') continue;  // required, or derived
    EXPECT_EQ(ConfigValueText(key, parsed), ConfigDefaultText(key)) << key.name;
  }
}

// Every choice --help lists is accepted, and a value outside them is
// refused naming the key.
TEST(Help, PrintedChoicesAreWhatTheParserAccepts) {
  for (const ConfigKey& key : ConfigKeyTable()) {
    if (key.choices.empty() || key.name == std::string("model")) continue;
    // A run the key's choices can be tried on.
    const auto words_with = [&](const std::string& value) {
      std::vector<std::string> words = GptWords();
      if (std::string(key.name).rfind("resnet.", 0) == 0) {
        words = {"--model",
                 "resnet",
                 "--resnet.width",
                 "8",
                 "--resnet.resolution",
                 "64",
                 "--resnet.classes",
                 "4",
                 "--micro-batch",
                 "2"};
        if (key.name != std::string("resnet.depth")) {
          words.insert(words.end(), {"--resnet.depth", "18"});
        }
      }
      if (std::string(key.name).rfind("llama.", 0) == 0) {
        words = {"--config", MEMPROF_SOURCE_DIR "/configs/llama-tiny.ini"};
      }
      if (value == "nccl")
        words.insert(words.end(), {"--train.device", "cuda"});
      words.insert(words.end(), {std::string("--") + key.name, value});
      return words;
    };
    for (const ConfigChoice& choice : key.choices) {
      try {
        ParsePredictArgs(words_with(choice.value));
      } catch (const InputError& e) {
        ADD_FAILURE() << key.name << " " << choice.value << ": " << e.what();
      }
    }
    try {
      ParsePredictArgs(words_with("7"));
      ADD_FAILURE() << key.name << " 7 accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key.name), std::string::npos)
          << e.what();
    }
  }
  // The models: the table's choices are the parser's.
  const ConfigKey& model = *FindConfigKey("model");
  std::string names;
  for (const ConfigChoice& choice : model.choices) {
    names += (names.empty() ? "" : ", ") + std::string(choice.value);
  }
  EXPECT_EQ(names, kKnownModels);
}

// The binary: `memprof help` lists the commands, `memprof help COMMAND` is
// `memprof COMMAND --help`.
TEST(Help, HelpCommandListsTheCommandsAndPrintsEachOnesHelp) {
  const CommandResult all = RunMemprof("help");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  for (const char* command :
       {"profile", "predict", "baseline", "check", "report", "fit", "sweep"}) {
    EXPECT_NE(all.output.find(std::string("\n  ") + command + " "),
              std::string::npos)
        << command << " not listed:\n"
        << all.output;
    const CommandResult help = RunMemprof(std::string("help ") + command);
    const CommandResult flag = RunMemprof(std::string(command) + " --help");
    EXPECT_EQ(help.exit_code, 0) << command << ": " << help.output;
    EXPECT_EQ(help.output, flag.output) << command;
    EXPECT_NE(help.output.find("--"), std::string::npos) << help.output;
  }
  const CommandResult unknown = RunMemprof("help profiel");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown command 'profiel'; known commands: "
                                "profile, predict"),
            std::string::npos)
      << unknown.output;
}

// The version and the commit the binary was built at (read at build time,
// not at configure time).
TEST(Help, VersionNamesTheReleaseAndTheCommit) {
  for (const char* word : {"--version", "version"}) {
    const CommandResult r = RunMemprof(word);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("^memprof [0-9]+\\.[0-9]+\\.[0-9]+ \\(git "
                             "([0-9a-f]{12}|unknown)\\)\n$")))
        << r.output;
  }
}

}  // namespace
}  // namespace memprof
