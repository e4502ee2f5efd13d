#include "profiler/cli/hf_config.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/size_table.h"
#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/cli/config_cli.h"
#include "tests/input_error_of.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

namespace memprof {
namespace {

using Keys = std::map<std::string, std::string>;

Keys KeysOf(const HfConfig& hf) {
  Keys keys;
  for (const HfKey& key : hf.keys) keys[key.key] = key.value;
  return keys;
}

// The InputError message of mapping `text`, or "" when it mapped.
std::string ErrorOf(const std::string& text) {
  try {
    HfConfigOf("cfg.json", text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "section.key" -> value of an INI file, '#' comments stripped.
Keys IniKeys(const std::string& path) {
  Keys keys;
  std::istringstream text(ReadText(path));
  std::string section;
  for (std::string line; std::getline(text, line);) {
    line = line.substr(0, line.find('#'));
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      return s;
    };
    line = trim(line);
    if (line.empty()) continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t equals = line.find('=');
    const std::string key = trim(line.substr(0, equals));
    keys[section.empty() ? key : section + "." + key] =
        trim(line.substr(equals + 1));
  }
  return keys;
}

constexpr const char* kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false, "attention_dropout": 0.0, "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false,
  "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "vocab_size": 128256})";

TEST(HfConfigTest, MapsLlamaOntoTheLlamaKeys) {
  const HfConfig hf = HfConfigOf("cfg.json", kLlama32);
  EXPECT_EQ(hf.model, "llama");
  EXPECT_EQ(hf.torch_dtype, "bfloat16");
  EXPECT_EQ(hf.sliding_window, 0);
  const Keys expected = {{"model", "llama"},
                         {"llama.num_hidden_layers", "16"},
                         {"llama.hidden_size", "2048"},
                         {"llama.intermediate_size", "8192"},
                         {"llama.num_attention_heads", "32"},
                         {"llama.num_key_value_heads", "8"},
                         {"llama.head_dim", "64"},
                         {"llama.vocab_size", "128256"},
                         {"llama.tie_word_embeddings", "true"},
                         {"llama.attention_bias", "false"},
                         {"llama.qkv_bias", "false"},
                         {"llama.mlp_bias", "false"},
                         {"llama.rms_norm_eps", "1e-05"},
                         {"llama.rope_theta", "500000.0"}};
  EXPECT_EQ(KeysOf(hf), expected);
  EXPECT_EQ(hf.keys.front().key, "model");
  EXPECT_EQ(hf.keys.front().field, "architectures");
}

TEST(HfConfigTest, FollowsEachClassDefaultsAndHardWiredBiases) {
  // Llama: key/value heads default to the query heads; no head_dim leaves
  // the model's default; absent flags are false.
  const HfConfig bare =
      HfConfigOf("cfg.json",
                 R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
          "intermediate_size": 176, "num_attention_heads": 4,
          "num_hidden_layers": 2, "vocab_size": 256, "head_dim": null,
          "rope_theta": 500000})");
  Keys keys = KeysOf(bare);
  // Each default is named as such, not as the file's field.
  for (const HfKey& key : bare.keys) {
    if (key.key == "llama.rms_norm_eps") {
      EXPECT_EQ(key.field, "rms_norm_eps absent: Hugging Face's default");
    }
    if (key.key == "llama.rope_theta") EXPECT_EQ(key.field, "rope_theta");
  }
  EXPECT_EQ(keys["llama.num_key_value_heads"], "4");
  EXPECT_EQ(keys.count("llama.head_dim"), 0u);
  EXPECT_EQ(keys["llama.tie_word_embeddings"], "false");
  EXPECT_EQ(keys["llama.attention_bias"], "false");
  EXPECT_EQ(keys["llama.qkv_bias"], "false");
  EXPECT_EQ(keys["llama.rms_norm_eps"], "1e-06");
  EXPECT_EQ(keys["llama.rope_theta"], "500000.0");
  // Qwen2's q/k/v biases (not o's) are on whatever attention_bias says;
  // Mistral has none whatever it says.
  const std::string sizes =
      R"("hidden_size": 64, "intermediate_size": 176,
         "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "vocab_size": 256, "attention_bias": )";
  keys = KeysOf(
      HfConfigOf("cfg.json", R"({"architectures": ["Qwen2ForCausalLM"], )" +
                                 sizes + "true, \"mlp_bias\": true}"));
  EXPECT_EQ(keys["llama.qkv_bias"], "true");
  EXPECT_EQ(keys["llama.attention_bias"], "false");
  EXPECT_EQ(keys["llama.mlp_bias"], "false");
  keys = KeysOf(HfConfigOf(
      "cfg.json",
      R"({"architectures": ["MistralForCausalLM"], )" + sizes + "true}"));
  EXPECT_EQ(keys["llama.attention_bias"], "false");
  EXPECT_EQ(keys["llama.qkv_bias"], "false");
  // Mistral and Qwen2 have no default for the key/value heads here.
  EXPECT_NE(ErrorOf(R"({"architectures": ["MistralForCausalLM"],
                        "hidden_size": 64, "intermediate_size": 176,
                        "num_attention_heads": 4, "num_hidden_layers": 2,
                        "vocab_size": 256})")
                .find("cfg.json: missing 'num_key_value_heads'"),
            std::string::npos);
}

TEST(HfConfigTest, RecordsTheSlidingWindowThatApplies) {
  const std::string sizes =
      R"("hidden_size": 64, "intermediate_size": 176,
         "num_attention_heads": 4, "num_key_value_heads": 2,
         "num_hidden_layers": 2, "vocab_size": 256, "sliding_window": 16)";
  EXPECT_EQ(
      HfConfigOf("m.json",
                 R"({"architectures": ["MistralForCausalLM"], )" + sizes + "}")
          .sliding_window,
      16);
  EXPECT_EQ(HfConfigOf("q.json", R"({"architectures": ["Qwen2ForCausalLM"],
                                     "use_sliding_window": false, )" +
                                     sizes + "}")
                .sliding_window,
            0);
  // Qwen2 slides the layers from max_window_layers on (28 when absent),
  // or those its layer_types names.
  const auto qwen2 = [&](const std::string& fields) {
    return HfConfigOf("q.json", R"({"architectures": ["Qwen2ForCausalLM"],
                                    "use_sliding_window": true, )" +
                                    fields + sizes + "}")
        .sliding_window;
  };
  EXPECT_EQ(qwen2(R"("max_window_layers": 1, )"), 16);
  EXPECT_EQ(qwen2(R"("max_window_layers": 2, )"), 0);
  EXPECT_EQ(qwen2(""), 0);
  EXPECT_EQ(
      qwen2(R"("layer_types": ["full_attention", "sliding_attention"], )"), 16);
  EXPECT_EQ(qwen2(R"("layer_types": ["full_attention", "full_attention"], )"),
            0);
  // A layer_types that does not name each layer's attention is refused,
  // not read as "no layer slides".
  for (const auto& [types, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"[1, 2]",
            "q.json: layer_types[0]: expected \"full_attention\" or "
            "\"sliding_attention\", got 1"},
           {"[]",
            "q.json: layer_types: expected one entry per layer "
            "(num_hidden_layers 2), got 0"},
           {R"(["full_attention", "Sliding_Attention"])",
            "q.json: layer_types[1]: expected \"full_attention\" or "
            "\"sliding_attention\", got 'Sliding_Attention'"}}) {
    SCOPED_TRACE(types);
    const std::string error =
        InputErrorOf([&] { qwen2(R"("layer_types": )" + types + ", "); });
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

constexpr const char* kGpt2Tiny = R"({
  "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
  "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0,
  "n_embd": 64, "n_head": 4, "n_inner": null, "n_layer": 2,
  "n_positions": 32, "vocab_size": 256, "torch_dtype": "float32"})";

TEST(HfConfigTest, MapsGpt2OntoTheGptKeys) {
  const HfConfig hf = HfConfigOf("cfg.json", kGpt2Tiny);
  const Keys expected = {{"model", "gpt"},      {"gpt.layers", "2"},
                         {"gpt.d_model", "64"}, {"gpt.heads", "4"},
                         {"gpt.vocab", "256"},  {"gpt.positions", "32"},
                         {"gpt.seq_len", "32"}, {"gpt.dropout", "0.0"}};
  EXPECT_EQ(KeysOf(hf), expected);
  // GPT2Config's dropout default, 0.1, for each probability not given.
  const Keys keys = KeysOf(HfConfigOf(
      "cfg.json", R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 64,
                      "n_head": 4, "n_layer": 2, "n_positions": 32,
                      "vocab_size": 256})"));
  EXPECT_EQ(keys.at("gpt.dropout"), "0.1");
}

// Each refusal names the file and the field.
TEST(HfConfigTest, RefusesWhatItCannotMapNamingTheFileAndField) {
  const std::string llama =
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
          "intermediate_size": 176, "num_attention_heads": 4,
          "num_hidden_layers": 2, "vocab_size": 256)";
  const std::string unsized =
      R"({"architectures": ["LlamaForCausalLM"], "intermediate_size": 176,
          "num_attention_heads": 4, "num_hidden_layers": 2,
          "vocab_size": 256)";
  const std::string gpt2 =
      R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_head": 4,
          "n_layer": 2, "n_positions": 32, "vocab_size": 256)";
  const std::pair<std::string, std::string> cases[] = {
      // Note [JSON members]: the second value would silently win.
      {llama + R"(, "hidden_size": 128})",
       "cfg.json: hidden_size: a member named twice; each name once"},
      {"{\"architectures\": [", "cfg.json: the file ends early (truncated?)"},
      {"{\"architectures\": [\"LlamaForCausalLM\"],, \"x\": 1}",
       "cfg.json: not valid JSON"},
      // A trailing comma ends the file on the '}', yet nothing is missing.
      {"{\"architectures\": [\"LlamaForCausalLM\"],}",
       "cfg.json: not valid JSON: parse error at line 1, column 40"},
      {unsized + R"(, "hidden_size": 64.0})",
       "cfg.json: hidden_size: expected an integer in [1, "},
      // A config's integers are at most 2^31 - 1, said of the field.
      {unsized + R"(, "hidden_size": 2147483648})",
       "cfg.json: hidden_size: expected an integer in [1, 2147483647], got "
       "2147483648"},
      {unsized + R"(, "hidden_size": 99999999999999999999999})",
       "got the number 9.999999999999999e+22"},
      {"[1, 2]", "cfg.json: expected a JSON object, got an array"},
      {R"({"hidden_size": 64})", "cfg.json: missing 'architectures'"},
      {R"({"architectures": ["MixtralForCausalLM"]})",
       "cfg.json: architectures: 'MixtralForCausalLM' is not supported; "
       "supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
       "GPT2LMHeadModel"},
      {R"({"architectures": ["LlamaForCausalLM", "GPT2LMHeadModel"]})",
       "cfg.json: architectures: expected one architecture name"},
      {R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2})",
       "cfg.json: missing 'hidden_size'"},
      {unsized + R"(, "hidden_size": "64"})",
       "cfg.json: hidden_size: expected an integer"},
      {unsized + R"(, "hidden_size": 0})",
       "cfg.json: hidden_size: expected an integer in [1, "},
      {llama + R"(, "tie_word_embeddings": 1})",
       "cfg.json: tie_word_embeddings: expected true or false, got 1"},
      {llama + R"(, "num_local_experts": 8})",
       "cfg.json: num_local_experts: a mixture-of-experts field"},
      {llama + R"(, "num_experts": 60})",
       "cfg.json: num_experts: a mixture-of-experts field"},
      {llama + R"(, "quantization_config": {"bits": 4}})",
       "cfg.json: quantization_config: quantized weights"},
      {llama + R"(, "hidden_act": "gelu"})", "cfg.json: hidden_act: 'gelu'"},
      {llama + R"(, "attention_dropout": 0.1})",
       "cfg.json: attention_dropout: attention dropout keeps a mask"},
      {gpt2 + R"(, "n_inner": 100})", "cfg.json: n_inner: memprof's GPT has"},
      {gpt2 + R"(, "attn_pdrop": 0.0})",
       "cfg.json: attn_pdrop: 0.0 differs from embd_pdrop 0.1"},
      {gpt2 + R"(, "tie_word_embeddings": false})",
       "cfg.json: tie_word_embeddings: false"},
      {gpt2 + R"(, "activation_function": "relu"})",
       "cfg.json: activation_function: 'relu'"},
      {gpt2 + R"(, "reorder_and_upcast_attn": true})",
       "cfg.json: reorder_and_upcast_attn: true"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find(expected), std::string::npos)
        << text << "\n  gave: " << error;
  }
  // Fields that are there but null are absent.
  EXPECT_EQ(ErrorOf(llama + R"(, "num_experts": null,
                                 "quantization_config": null})"),
            "");
}

TEST(HfConfigTest, RefusesASlidingWindowShorterThanSeqLen) {
  RunConfig config;
  config.model = "gpt";
  config.gpt.seq_len = 32;
  config.origins["gpt.seq_len"] = "--gpt.seq_len";
  HfConfig hf;
  hf.path = "cfg.json";
  hf.model = "gpt";
  hf.sliding_window = 32;
  EXPECT_TRUE(HfConfigWarnings(hf, config).empty());
  hf.sliding_window = 16;
  try {
    HfConfigWarnings(hf, config);
    FAIL() << "a window of 16 under seq_len 32 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cfg.json: sliding_window 16 is shorter than gpt.seq_len 32 "
                  "(--gpt.seq_len)"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfigTest, WarnsThatTorchDtypeDoesNotSetTheTrainingDtype) {
  RunConfig config;
  config.model = "gpt";
  config.origins["train.dtype"] = "default";
  HfConfig hf;
  hf.path = "cfg.json";
  hf.model = "gpt";
  hf.torch_dtype = "bfloat16";
  const std::vector<std::string> warnings = HfConfigWarnings(hf, config);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cfg.json: torch_dtype bfloat16 is the dtype the "
                             "checkpoint is stored in"),
            std::string::npos)
      << warnings[0];
  // A dtype the user chose is not second-guessed.
  config.origins["train.dtype"] = "--train.dtype";
  EXPECT_TRUE(HfConfigWarnings(hf, config).empty());
  config.origins["train.dtype"] = "default";
  hf.torch_dtype = "float32";
  EXPECT_TRUE(HfConfigWarnings(hf, config).empty());
}

// Note [Hugging Face config]: JSON, then the INI file, then flags.
class HfConfigCliTest : public TempDirTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(HfConfigCliTest, FlagsOverTheIniOverTheJson) {
  const std::string json = Write("config.json", kGpt2Tiny);
  const std::string ini = Write("over.ini",
                                "[gpt]\nlayers = 3\nheads = 8\n[train]\n"
                                "micro_batch = 2\n");
  const ProfileArgs args = ParseProfileArgs(
      {"--hf-config", json, "--config", ini, "--gpt.heads", "2"});
  const RunConfig& c = args.config;
  EXPECT_EQ(c.model, "gpt");
  EXPECT_EQ(c.gpt.layers, 3);
  EXPECT_EQ(c.gpt.heads, 2);
  EXPECT_EQ(c.gpt.d_model, 64);
  EXPECT_EQ(c.gpt.seq_len, 32);
  EXPECT_EQ(c.origins.at("model"), json + ": architectures");
  EXPECT_EQ(c.origins.at("gpt.d_model"), json + ": n_embd");
  EXPECT_EQ(c.origins.at("gpt.layers"), ini + ":2");
  EXPECT_EQ(c.origins.at("gpt.heads"), "--gpt.heads");
  EXPECT_EQ(c.origins.at("train.micro_batch"), ini + ":5");
  EXPECT_EQ(c.origins.at("gpt.dropout"), json + ": embd_pdrop");
  // A field the file lacks is Hugging Face's default, not the file's.
  std::string lacking = kGpt2Tiny;
  lacking.replace(lacking.find("\"attn_pdrop\": 0.0, \"embd_pdrop\": 0.0, "
                               "\"resid_pdrop\": 0.0,"),
                  57, "");
  const std::string bare = Write("bare.json", lacking);
  const ProfileArgs defaults =
      ParseProfileArgs({"--hf-config", bare, "--config", ini});
  EXPECT_EQ(defaults.config.gpt.dropout, 0.1);
  EXPECT_EQ(defaults.config.origins.at("gpt.dropout"),
            bare + ": embd_pdrop absent: Hugging Face's default");
}

// GPT-2 trained on sequences shorter than n_positions keeps its table of
// n_positions rows: --gpt.seq_len changes the activations, not the
// weights; a sequence longer than the table is refused.
TEST_F(HfConfigCliTest, ShorterSequencesKeepGpt2sPositionTable) {
  const std::string json = Write("config.json", kGpt2Tiny);
  const RunConfig full =
      ParseProfileArgs({"--hf-config", json, "--micro-batch", "1"}).config;
  const RunConfig shorter =
      ParseProfileArgs(
          {"--hf-config", json, "--micro-batch", "1", "--gpt.seq_len", "8"})
          .config;
  EXPECT_EQ(full.gpt.seq_len, 32);
  EXPECT_EQ(shorter.gpt.seq_len, 8);
  EXPECT_EQ(shorter.gpt.positions, 32);
  EXPECT_EQ(shorter.origins.at("gpt.positions"), json + ": n_positions");
  EXPECT_EQ(BuildSizeTable(shorter, 1).Elements(RowKind::kParameter),
            BuildSizeTable(full, 1).Elements(RowKind::kParameter));
  EXPECT_LT(BuildSizeTable(shorter, 1).Bytes(RowKind::kSaved),
            BuildSizeTable(full, 1).Bytes(RowKind::kSaved));
  EXPECT_EQ(InputErrorOf([&] {
              ParseProfileArgs({"--hf-config", json, "--micro-batch", "1",
                                "--gpt.seq_len", "33"});
            }),
            "--gpt.seq_len: gpt.seq_len 33 is longer than gpt.positions 32: "
            "the position table has one row per position; set gpt.seq_len "
            "to at most 32");
}

// fit --measure and sweep run `memprof profile` with the same config.json.
TEST_F(HfConfigCliTest, FitAndSweepPassTheJsonOnToTheirRuns) {
  const std::string json = Write("config.json", kGpt2Tiny);
  const FitArgs fit = ParseFitArgs(
      {"--hf-config", json, "--budget", "1GiB", "--micro-batch", "2"});
  EXPECT_EQ(fit.config.gpt.d_model, 64);
  const std::vector<std::string> passed = {"--hf-config", json};
  EXPECT_NE(std::search(fit.profile_words.begin(), fit.profile_words.end(),
                        passed.begin(), passed.end()),
            fit.profile_words.end());
  const SweepArgs sweep = ParseSweepArgs(
      {"--hf-config", json, "--world-sizes", "1,2", "--global-batch", "4"});
  EXPECT_EQ(sweep.config.gpt.seq_len, 32);
  EXPECT_NE(std::search(sweep.profile_words.begin(), sweep.profile_words.end(),
                        passed.begin(), passed.end()),
            sweep.profile_words.end());
}

TEST_F(HfConfigCliTest, RefusesAModelOtherThanTheJsons) {
  const std::string json = Write("config.json", kGpt2Tiny);
  const std::string ini = Write("mlp.ini",
                                "model = mlp\n[mlp]\ninput = 2\nhidden = 2\n"
                                "depth = 1\noutput = 2\n");
  try {
    ParseProfileArgs({"--hf-config", json, "--config", ini});
    FAIL() << "model = mlp over a GPT-2 config.json was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  json +
                  ": architectures: GPT2LMHeadModel is memprof's "
                  "model gpt, but the model is mlp (" +
                  ini + ":1)"),
              std::string::npos)
        << e.what();
  }
}

// memprof predict with the GPT-2 config.json of gpt-tiny's sizes prints what
// it prints for configs/gpt-tiny.ini, but for the file it names.
TEST_F(HfConfigCliTest, Gpt2JsonPredictsAsTheIni) {
  const std::string ini = MEMPROF_SOURCE_DIR "/configs/gpt-tiny.ini";
  const std::string json = Write("config.json", kGpt2Tiny);
  const std::string train =
      " --micro-batch 4 --steps 4 --train.optimizer adam --train.lr 0.001";
  for (const std::string flags : {"", " --json", " --table"}) {
    const CommandResult from_ini =
        RunMemprof("predict --config " + ini + flags);
    CommandResult from_json =
        RunMemprof("predict --hf-config " + json + train + flags);
    ASSERT_EQ(from_ini.exit_code, 0) << from_ini.output;
    ASSERT_EQ(from_json.exit_code, 0) << from_json.output;
    for (size_t at; (at = from_json.output.find(json)) != std::string::npos;) {
      from_json.output.replace(at, json.size(), ini);
    }
    EXPECT_EQ(from_json.output, from_ini.output) << flags;
  }
}

// Bad input exits 2 naming the file and the field, before anything runs.
TEST_F(HfConfigCliTest, BadJsonExitsTwoNamingFileAndField) {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"architectures\": [\"GPT2LMHeadModel\"", "the file ends early"},
      {R"({"architectures": ["GPT2LMHeadModel"], "n_layer": 2})",
       "missing 'n_embd'"},
      {R"({"architectures": ["T5ForConditionalGeneration"]})",
       "architectures: 'T5ForConditionalGeneration' is not supported; "
       "supported: LlamaForCausalLM"},
  };
  int i = 0;
  for (const auto& [text, expected] : cases) {
    const std::string json = Write("bad" + std::to_string(i++) + ".json", text);
    for (const std::string command : {"predict", "fit --budget 1GiB"}) {
      const CommandResult r =
          RunMemprof(command + " --hf-config " + json + " --micro-batch 1");
      EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
      EXPECT_NE(r.output.find(json + ": " + expected), std::string::npos)
          << command << ": " << r.output;
    }
  }
  const CommandResult missing =
      RunMemprof("predict --hf-config " + (dir_ / "none.json").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cannot read Hugging Face config"),
            std::string::npos)
      << missing.output;
}

// The parameters of a Llama-family model from its keys, as Hugging Face's
// classes build it: embedding; per layer q, k, v, o (q/k/v biases under
// attention_bias or qkv_bias, o's under attention_bias), gate, up, down
// (biases under mlp_bias) and two norms; the final norm; the head unless
// tied.
int64_t LlamaParameters(const Keys& k) {
  const auto n = [&](const std::string& key) {
    return std::stoll(k.at("llama." + key));
  };
  const int64_t d = n("hidden_size"), layers = n("num_hidden_layers"),
                heads = n("num_attention_heads"), kv = n("num_key_value_heads"),
                ffn = n("intermediate_size"), vocab = n("vocab_size");
  const int64_t hd = k.count("llama.head_dim") ? n("head_dim") : d / heads;
  const bool o_bias = k.at("llama.attention_bias") == "true";
  const bool qkv_bias = o_bias || k.at("llama.qkv_bias") == "true";
  const bool mlp_bias = k.at("llama.mlp_bias") == "true";
  const int64_t attention = d * heads * hd + 2 * d * kv * hd + heads * hd * d +
                            (qkv_bias ? heads * hd + 2 * kv * hd : 0) +
                            (o_bias ? d : 0);
  const int64_t mlp = 3 * d * ffn + (mlp_bias ? 2 * ffn + d : 0);
  const bool tied = k.at("llama.tie_word_embeddings") == "true";
  return vocab * d + layers * (attention + mlp + 2 * d) + d +
         (tied ? 0 : vocab * d);
}

// The shipped config.json files give the published parameter counts (each
// INI names its source), and each INI's [llama] keys are the JSON's.
TEST(HfConfigShippedTest, ConfigsGiveThePublishedParameterCounts) {
  const std::pair<std::string, int64_t> published[] = {
      {"llama-3.2-1b", 1'235'814'400},
      {"llama-3.1-8b", 8'030'261'248},
      {"mistral-7b", 7'241'732'096},
      {"qwen2.5-0.5b", 494'032'768},
  };
  for (const auto& [name, parameters] : published) {
    const HfConfig hf =
        ReadHfConfig(MEMPROF_SOURCE_DIR "/configs/hf/" + name + ".json");
    const Keys from_json = KeysOf(hf);
    EXPECT_EQ(LlamaParameters(from_json), parameters) << name;
    Keys from_ini = IniKeys(MEMPROF_SOURCE_DIR "/configs/" + name + ".ini");
    EXPECT_EQ(LlamaParameters(from_ini), parameters) << name;
    // The JSON's keys, head_dim where it has none at its default.
    for (const auto& [key, value] : from_json) {
      EXPECT_EQ(from_ini[key], value) << name << " " << key;
    }
    for (const auto& [key, value] : from_ini) {
      if (key.rfind("llama.", 0) != 0 || key == "llama.seq_len") continue;
      if (key == "llama.head_dim" && from_json.count(key) == 0) {
        EXPECT_EQ(std::stoll(value),
                  std::stoll(from_json.at("llama.hidden_size")) /
                      std::stoll(from_json.at("llama.num_attention_heads")))
            << name;
        continue;
      }
      EXPECT_EQ(from_json.count(key), 1u) << name << " " << key;
    }
  }
}

// `memprof args` with its standard output alone (the config.json's
// torch_dtype warning goes to standard error).
CommandResult StdoutOfMemprof(const std::string& args) {
  return RunCommand("(" + std::string(MEMPROF_BINARY) + " " + args +
                    " 2>/dev/null)");
}

// Each shipped config.json predicts what its INI predicts (the INI's [train]
// keys given as flags), and memprof's own size table counts the published
// parameters: the JSON, the INI and the model agree.
TEST(HfConfigShippedTest, EachJsonPredictsAsItsIni) {
  const std::pair<std::string, int64_t> published[] = {
      {"llama-3.2-1b", 1'235'814'400},
      {"llama-3.1-8b", 8'030'261'248},
      {"mistral-7b", 7'241'732'096},
      {"qwen2.5-0.5b", 494'032'768},
  };
  const std::string train =
      " --llama.seq_len 2048 --micro-batch 1 --steps 4"
      " --train.optimizer adamw --train.lr 0.0003 --world-size 8 --json";
  for (const auto& [name, parameters] : published) {
    const CommandResult from_ini =
        StdoutOfMemprof("predict --config " MEMPROF_SOURCE_DIR "/configs/" +
                        name + ".ini --world-size 8 --json");
    const CommandResult from_json = StdoutOfMemprof(
        "predict --hf-config " MEMPROF_SOURCE_DIR "/configs/hf/" + name +
        ".json" + train + "");
    ASSERT_EQ(from_ini.exit_code, 0) << name << from_ini.output;
    ASSERT_EQ(from_json.exit_code, 0) << name << from_json.output;
    nlohmann::json ini = nlohmann::json::parse(from_ini.output);
    nlohmann::json json = nlohmann::json::parse(from_json.output);
    EXPECT_EQ(ini.at("parameters").get<int64_t>(), parameters) << name;
    // The one difference: the file each names as its source.
    EXPECT_NE(json["config"]["source"].get<std::string>().find("/configs/hf/" +
                                                               name + ".json"),
              std::string::npos);
    ini["config"].erase("source");
    json["config"].erase("source");
    EXPECT_TRUE(json == ini)
        << name << ": " << nlohmann::json::diff(ini, json).dump();
  }
}

// fit on Llama-3.1-8B from its config.json, 80 GiB at 8 ranks: the model
// state alone overflows, and fit says so with predict's own figures (the
// model state, the peak, the ZeRO-2 shard that fits).
TEST(HfConfigShippedTest, FitOnLlama8BAgreesWithPredict) {
  const std::string run = " --hf-config " MEMPROF_SOURCE_DIR
                          "/configs/hf/llama-3.1-8b.json --llama.seq_len 2048 "
                          "--micro-batch 1 --world-size 8 "
                          "--train.optimizer adamw";
  const CommandResult predict = StdoutOfMemprof("predict --json" + run);
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const nlohmann::json p = nlohmann::json::parse(predict.output);
  const CommandResult fit = StdoutOfMemprof("fit --budget 80GiB" + run);
  EXPECT_EQ(fit.exit_code, 1) << fit.output;
  const std::string& out = fit.output;
  const auto says = [&](const std::string& text) {
    EXPECT_NE(out.find(text), std::string::npos) << text << "\n" << out;
  };
  says("verdict: model-state-overflow");
  says(HumanBytes(p.at("model_state").at("bytes_per_rank").get<int64_t>()) +
       " per rank, alone over the budget");
  says("predicted peak per rank: " +
       HumanBytes(p.at("peak").at("total_bytes").get<int64_t>()));
  says("ZeRO-2 at 8 ranks");
}

}  // namespace
}  // namespace memprof
