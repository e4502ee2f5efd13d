#include "profiler/cli/hf_config.h"

#include <limits>

#include "profiler/base/effective_config.h"
#include "profiler/base/errors.h"
#include "profiler/base/json_reader.h"
#include "profiler/base/regular_file.h"

namespace memprof {
namespace {

using Json = JsonReader::Json;

constexpr const char* kRemedy =
    "fix the field, or pass --hf-config the config.json of the model's "
    "Hugging Face repository as published";
constexpr const char* kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel";
// A config's integers are at most 2^31 - 1 (docs/reference.md): a larger
// size is refused here, naming the field, not later naming the key.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

// Mixture-of-experts fields of the config classes that have them.
constexpr const char* kMoeFields[] = {
    "num_experts",          "num_local_experts", "num_experts_per_tok",
    "n_routed_experts",     "n_shared_experts",  "num_shared_experts",
    "moe_intermediate_size"};

bool Has(const Json& doc, const char* field) {
  const auto it = doc.find(field);
  return it != doc.end() && !it->is_null();
}

// Whether a Qwen2 config with use_sliding_window true has a layer that
// slides, as Qwen2Config decides: its "layer_types" when given, else the
// layers from max_window_layers on (28 when absent).
// "layer_types" must name each layer's attention, one per layer.
bool Qwen2Slides(const Json& doc, const JsonReader& reader) {
  const int64_t layers =
      reader.Integer(doc, "", "num_hidden_layers", 1, kMaxSize);
  if (Has(doc, "layer_types")) {
    const Json& types = reader.Array(doc, "", "layer_types");
    if (static_cast<int64_t>(types.size()) != layers) {
      reader.Fail("layer_types",
                  "expected one entry per layer (num_hidden_layers " +
                      std::to_string(layers) + "), got " +
                      std::to_string(types.size()));
    }
    bool slides = false;
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] != "full_attention" && types[i] != "sliding_attention") {
        reader.Fail(JsonElement("layer_types", i),
                    "expected \"full_attention\" or \"sliding_attention\", "
                    "got " +
                        DescribeJson(types[i]));
      }
      slides = slides || types[i] == "sliding_attention";
    }
    return slides;
  }
  const int64_t full =
      Has(doc, "max_window_layers")
          ? reader.Integer(doc, "", "max_window_layers", 0, kMaxSize)
          : 28;
  return full < layers;
}

class Mapper {
 public:
  Mapper(const std::string& path, const Json& doc, HfConfig& hf)
      : reader_(path, kRemedy), doc_(doc), hf_(hf) {}

  const JsonReader& reader() const { return reader_; }

  void Set(const std::string& key, const std::string& value,
           const std::string& field) {
    hf_.keys.push_back(HfKey{key, value, field});
  }
  // A required size: an integer of at least 1.
  int64_t Size(const std::string& key, const char* field) {
    const int64_t value = reader_.Integer(doc_, "", field, 1, kMaxSize);
    Set(key, std::to_string(value), field);
    return value;
  }
  // An optional flag, `fallback` when absent or null.
  void Flag(const std::string& key, const char* field, bool fallback) {
    const bool value =
        Has(doc_, field) ? reader_.Bool(doc_, "", field) : fallback;
    Set(key, value ? "true" : "false", Given(field));
  }
  void Number(const std::string& key, const char* field, double fallback) {
    const double value =
        Has(doc_, field) ? reader_.Number(doc_, "", field) : fallback;
    Set(key, Json(value).dump(), Given(field));
  }
  // An optional field as an origin names it: "rms_norm_eps", or, when the
  // file lacks it (or has null), "rms_norm_eps absent: Hugging Face's
  // default", which memprof then used.
  std::string Given(const char* field) const {
    return Has(doc_, field)
               ? field
               : std::string(field) + " absent: Hugging Face's default";
  }
  [[noreturn]] void Refuse(const std::string& field,
                           const std::string& reason) const {
    throw InputError(hf_.path + ": " + field + ": " + reason);
  }
  // `field`'s string value, or `fallback` when absent or null.
  std::string Text(const char* field, const std::string& fallback) const {
    return Has(doc_, field) ? reader_.String(doc_, "", field) : fallback;
  }

 private:
  JsonReader reader_;
  const Json& doc_;
  HfConfig& hf_;
};

void MapLlama(const Json& doc, Mapper& m, HfConfig& hf) {
  const std::string& arch = hf.architecture;
  m.Size("llama.num_hidden_layers", "num_hidden_layers");
  m.Size("llama.hidden_size", "hidden_size");
  m.Size("llama.intermediate_size", "intermediate_size");
  const int64_t heads =
      m.Size("llama.num_attention_heads", "num_attention_heads");
  if (arch == "LlamaForCausalLM" && !Has(doc, "num_key_value_heads")) {
    m.Set("llama.num_key_value_heads", std::to_string(heads),
          "num_attention_heads");
  } else {
    m.Size("llama.num_key_value_heads", "num_key_value_heads");
  }
  if (Has(doc, "head_dim")) m.Size("llama.head_dim", "head_dim");
  m.Size("llama.vocab_size", "vocab_size");
  m.Flag("llama.tie_word_embeddings", "tie_word_embeddings", false);
  // llama.attention_bias biases q, k, v and o, as Llama's attention_bias
  // does; llama.qkv_bias q, k and v only, as Qwen2 always has whatever
  // attention_bias says. Mistral has no biases.
  if (arch == "LlamaForCausalLM") {
    m.Flag("llama.attention_bias", "attention_bias", false);
    m.Flag("llama.mlp_bias", "mlp_bias", false);
  } else {
    m.Set("llama.attention_bias", "false", "architectures");
    m.Set("llama.mlp_bias", "false", "architectures");
  }
  m.Set("llama.qkv_bias", arch == "Qwen2ForCausalLM" ? "true" : "false",
        "architectures");
  m.Number("llama.rms_norm_eps", "rms_norm_eps", 1e-6);
  m.Number("llama.rope_theta", "rope_theta", 10000.0);

  if (const std::string act = m.Text("hidden_act", "silu"); act != "silu") {
    m.Refuse("hidden_act", "'" + act +
                               "': memprof's llama model computes SwiGLU "
                               "with silu only");
  }
  if (Has(doc, "attention_dropout") &&
      m.reader().Number(doc, "", "attention_dropout") != 0) {
    m.Refuse("attention_dropout",
             "attention dropout keeps a mask memprof's llama model does not "
             "have; set it to 0.0");
  }
  const char* window_field = nullptr;
  if (arch == "MistralForCausalLM") {
    window_field = "sliding_window";
  } else if (arch == "Qwen2ForCausalLM" && Has(doc, "use_sliding_window") &&
             m.reader().Bool(doc, "", "use_sliding_window") &&
             Qwen2Slides(doc, m.reader())) {
    window_field = "sliding_window";
  }
  if (window_field != nullptr && Has(doc, window_field)) {
    hf.sliding_window = m.reader().Integer(doc, "", window_field, 1, kMaxSize);
  }
}

void MapGpt2(const Json& doc, Mapper& m) {
  m.Size("gpt.layers", "n_layer");
  const int64_t width = m.Size("gpt.d_model", "n_embd");
  m.Size("gpt.heads", "n_head");
  m.Size("gpt.vocab", "vocab_size");
  // The table keeps n_positions rows whatever length the run trains at;
  // the run trains at the full context unless --gpt.seq_len says less.
  const int64_t positions = m.Size("gpt.positions", "n_positions");
  m.Set("gpt.seq_len", std::to_string(positions), "n_positions");
  if (Has(doc, "n_inner") &&
      m.reader().Integer(doc, "", "n_inner", 1, kMaxSize) != 4 * width) {
    m.Refuse("n_inner", "memprof's GPT has an MLP of 4 * n_embd = " +
                            std::to_string(4 * width) +
                            "; remove n_inner or set it to null");
  }
  if (const std::string act = m.Text("activation_function", "gelu_new");
      act != "gelu_new" && act != "gelu_pytorch_tanh") {
    m.Refuse(
        "activation_function",
        "'" + act + "': memprof's GPT computes the tanh GELU (gelu_new) only");
  }
  if (Has(doc, "tie_word_embeddings") &&
      !m.reader().Bool(doc, "", "tie_word_embeddings")) {
    m.Refuse("tie_word_embeddings",
             "false: memprof's GPT ties its output projection to the token "
             "embedding, as GPT-2 does");
  }
  for (const char* field : {"reorder_and_upcast_attn", "add_cross_attention"}) {
    if (Has(doc, field) && m.reader().Bool(doc, "", field)) {
      m.Refuse(field, "true: memprof's GPT does not model it");
    }
  }
  // GPT2Config's default for each of the three.
  constexpr double kDefaultDropout = 0.1;
  double dropout = -1;
  std::string first;
  std::string given;  // the first of them the file has
  for (const char* field : {"embd_pdrop", "attn_pdrop", "resid_pdrop"}) {
    const double p =
        Has(doc, field) ? m.reader().Number(doc, "", field) : kDefaultDropout;
    if (dropout >= 0 && p != dropout) {
      m.Refuse(field, Json(p).dump() + " differs from " + first + " " +
                          Json(dropout).dump() +
                          ": memprof's GPT has one dropout probability");
    }
    dropout = p;
    if (first.empty()) first = field;
    if (given.empty() && Has(doc, field)) given = field;
  }
  m.Set("gpt.dropout", Json(dropout).dump(),
        given.empty() ? m.Given("embd_pdrop") : given);
}

}  // namespace

HfConfig HfConfigOf(const std::string& path, const std::string& text) {
  HfConfig hf;
  hf.path = path;
  const JsonReader reader(path, kRemedy);
  const Json doc = reader.Parse(text);
  if (!doc.is_object()) {
    reader.Fail("", "expected a JSON object, got " + DescribeJson(doc));
  }
  Mapper mapper(path, doc, hf);
  const Json& archs = mapper.reader().Array(doc, "", "architectures");
  if (archs.size() != 1 || !archs[0].is_string()) {
    mapper.reader().Fail("architectures",
                         "expected one architecture name, such as "
                         "[\"LlamaForCausalLM\"]");
  }
  hf.architecture = archs[0].get<std::string>();
  if (hf.architecture == "LlamaForCausalLM" ||
      hf.architecture == "MistralForCausalLM" ||
      hf.architecture == "Qwen2ForCausalLM") {
    hf.model = "llama";
  } else if (hf.architecture == "GPT2LMHeadModel") {
    hf.model = "gpt";
  } else {
    mapper.Refuse(
        "architectures",
        "'" + hf.architecture + "' is not supported; supported: " + kSupported);
  }
  mapper.Set("model", hf.model, "architectures");
  for (const char* field : kMoeFields) {
    if (Has(doc, field)) {
      mapper.Refuse(field,
                    "a mixture-of-experts field: memprof models dense MLPs "
                    "only");
    }
  }
  if (Has(doc, "quantization_config")) {
    mapper.Refuse("quantization_config",
                  "quantized weights: memprof models float32 and bfloat16 "
                  "weights only; use the unquantized model's config.json");
  }
  if (hf.model == "llama") {
    MapLlama(doc, mapper, hf);
  } else {
    MapGpt2(doc, mapper);
  }
  // transformers writes torch_dtype, and dtype from version 5.
  hf.torch_dtype = mapper.Text("torch_dtype", mapper.Text("dtype", ""));
  return hf;
}

HfConfig ReadHfConfig(const std::string& path) {
  return HfConfigOf(path, ReadRegularFile(path, "Hugging Face config",
                                          kMaxHfConfigFileBytes, kRemedy));
}

std::vector<std::string> HfConfigWarnings(const HfConfig& hf,
                                          const RunConfig& config) {
  std::vector<std::string> warnings;
  const std::string seq_key = hf.model + ".seq_len";
  for (const ConfigEntry& entry : EffectiveConfig(config)) {
    if (entry.key == seq_key && hf.sliding_window > 0 &&
        std::stoll(entry.value) > hf.sliding_window) {
      throw InputError(
          hf.path + ": sliding_window " + std::to_string(hf.sliding_window) +
          " is shorter than " + seq_key + " " + entry.value + " (" +
          entry.origin +
          "): memprof's model attends over the whole causal context, not a "
          "sliding window; set " +
          seq_key + " to at most " + std::to_string(hf.sliding_window));
    }
    if (entry.key == "train.dtype" && entry.origin == "default" &&
        !hf.torch_dtype.empty() && hf.torch_dtype != "float32" &&
        hf.torch_dtype != entry.value) {
      warnings.push_back(
          hf.path + ": torch_dtype " + hf.torch_dtype +
          " is the dtype the checkpoint is stored in, not a training "
          "choice: this run trains in " +
          entry.value + " (train.dtype's default)" +
          (hf.torch_dtype == "bfloat16"
               ? "; to train in bfloat16, set --train.dtype bfloat16 or "
                 "bf16-autocast"
               : "; memprof trains in float32, bf16-autocast or bfloat16 "
                 "(--train.dtype)"));
    }
  }
  return warnings;
}

}  // namespace memprof
