// RankReportFromJson: the one reader of rank-<r>.json (rank_report.h).
#include <climits>
#include <limits>

#include "profiler/base/cpu_threads.h"
#include "profiler/base/json_reader.h"
#include "profiler/base/regular_file.h"
#include "profiler/base/schema_version.h"
#include "profiler/report/rank_report.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxWorldSize = 1 << 16;
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr const char* kRemedy =
    "rerun 'memprof profile' to write the reports again";

// Reads every member of one rank report; `r_` is the JsonReader naming the
// file and the remedy in every error.
class RankReportReader {
 public:
  explicit RankReportReader(const std::string& origin) : r_(origin, kRemedy) {}

  ReportContext ContextOf(const Json& c) const { return Context(c); }

  RankReport Read(const Json& doc) const {
    r_.Schema(doc, kRankSchema);
    RankReport out;
    out.context = Context(r_.Object(doc, "", "context"));
    if (const auto p = doc.find("post_mortem");  // since 1.7
        p != doc.end() && !p->is_null()) {
      out.post_mortem = PostMortem(r_.Object(doc, "", "post_mortem"));
    }
    out.parameters = r_.Bytes(doc, "", "parameters");
    out.predicted_parameters = r_.Bytes(doc, "", "predicted_parameters");
    // Since memprof.rank/1.11; before it every parameter was trained.
    out.trained_parameters = doc.contains("trained_parameters")
                                 ? r_.Bytes(doc, "", "trained_parameters")
                                 : out.parameters;
    out.predicted_trained_parameters =
        doc.contains("predicted_trained_parameters")
            ? r_.Bytes(doc, "", "predicted_trained_parameters")
            : out.predicted_parameters;
    out.micro_batch = r_.Bytes(doc, "", "micro_batch");
    Categories(r_.Object(doc, "", "categories"), out);
    Peaks(doc, out);
    RequireCategoriesAtPeak(out);
    out.steps = Steps(r_.Array(doc, "", "steps"), out.step_details);
    out.ddp = Ddp(r_.Object(doc, "", "ddp"));
    out.redundancy = Redundancies(r_.Object(doc, "", "redundancy"));
    if (const auto oom = doc.find("out_of_memory");
        oom != doc.end() && !oom->is_null()) {
      out.out_of_memory = OutOfMemory(r_.Object(doc, "", "out_of_memory"));
    }
    // A rank stopped before step 1 ran none (since memprof.rank/1.8).
    if (out.steps.empty() && !out.out_of_memory && !out.post_mortem) {
      r_.Fail("steps",
              "empty (no step ran), yet the rank neither ran out of memory "
              "nor was killed");
    }
    out.timeline = Timeline(r_.Array(doc, "", "timeline"));
    out.series = Series(r_.Object(doc, "", "series"));
    out.hook = Hook(r_.Object(doc, "", "hook"));
    if (const auto replay = doc.find("cuda_replay");  // since 1.1
        replay != doc.end() && !replay->is_null()) {
      out.cuda_replay = Replay(r_.Object(doc, "", "cuda_replay"));
    }
    if (const auto run = doc.find("cuda_run");  // since 1.2
        run != doc.end() && !run->is_null()) {
      out.cuda_run = CudaRunOf(r_.Object(doc, "", "cuda_run"));
    }
    if (const auto zero = doc.find("zero");  // since 1.3
        zero != doc.end() && !zero->is_null()) {
      out.zero = Zero(r_.Object(doc, "", "zero"), out.context.world_size);
    }
    if (const auto c = doc.find("checkpointing");  // since 1.5
        c != doc.end() && !c->is_null()) {
      const Json& object = r_.Object(doc, "", "checkpointing");
      CheckpointingFigures figures;
      figures.mode = r_.String(object, "checkpointing", "mode");
      figures.held_bytes = r_.Bytes(object, "checkpointing", "held_bytes");
      figures.predicted_held_bytes =
          r_.Bytes(object, "checkpointing", "predicted_held_bytes");
      out.checkpointing = figures;
    }
    if (doc.contains("scopes")) {  // since 1.10
      out.scopes = Scopes(r_.Array(doc, "", "scopes"));
    }
    return out;
  }

 private:
  int Int(const Json& object, const std::string& where, const std::string& key,
          int64_t min = 0, int64_t max = INT_MAX) const {
    return static_cast<int>(r_.Integer(object, where, key, min, max));
  }

  int64_t Seq(const Json& object, const std::string& where,
              const std::string& key) const {
    return r_.Integer(object, where, key, -1, kMaxInt64);
  }

  Phase PhaseOf(const Json& object, const std::string& where,
                const std::string& key) const {
    const std::string name = r_.String(object, where, key);
    const std::optional<Phase> phase = PhaseFromName(name);
    if (!phase) r_.Fail(JsonPath(where, key), "unknown phase '" + name + "'");
    return *phase;
  }

  Breakdown BreakdownOf(const Json& object, const std::string& where,
                        const std::string& key) const {
    const Json& bytes = r_.Object(object, where, key);
    Breakdown out{};
    for (Category c : kAllCategories) {
      const std::string name(CategoryName(c));
      if (IsLaterCategory(c) && !bytes.contains(name)) continue;
      out[Index(c)] = r_.Bytes(bytes, JsonPath(where, key), name);
    }
    return out;
  }

  // An optional member (absent in files of an earlier minor version).
  template <typename T, typename Get>
  T Optional(const Json& object, const std::string& key, T fallback,
             Get get) const {
    return object.contains(key) ? get() : fallback;
  }

  RunConfig Config(const Json& c, const std::string& where) const;
  ReportContext Context(const Json& c) const;
  PostMortemFigures PostMortem(const Json& p) const {
    const std::string where = "post_mortem";
    PostMortemFigures f;
    f.killed_by = r_.String(p, where, "killed_by");
    f.records = r_.Bytes(p, where, "records");
    f.torn_record_dropped = r_.Bool(p, where, "torn_record_dropped");
    f.cut_short = Optional(p, "cut_short", false,  // since 1.8
                           [&] { return r_.Bool(p, where, "cut_short"); });
    f.last_seq = Seq(p, where, "last_seq");
    f.step = Int(p, where, "step", 0);
    f.phase = PhaseOf(p, where, "phase");
    f.live_bytes = BreakdownOf(p, where, "live_bytes");
    return f;
  }
  ZeroFigures Zero(const Json& z, int world_size) const;
  void Categories(const Json& categories, RankReport& out) const;
  PeakFigures Peak(const Json& peak, const std::string& where) const;
  void RequireSum(const Breakdown& breakdown, int64_t total,
                  const std::string& where, const char* key) const;
  void RequireCategoriesAtPeak(const RankReport& out) const;
  void Peaks(const Json& doc, RankReport& out) const;
  std::vector<StepReport> Steps(const Json& steps,
                                std::vector<StepDetail>& details) const;
  DdpFigures Ddp(const Json& ddp) const;
  std::vector<RedundancyFigures> Redundancies(const Json& redundancy) const;
  FitAnswer Fit(const Json& fit, int64_t limit_bytes) const;
  OutOfMemoryFigures OutOfMemory(const Json& oom) const;
  std::vector<TimelineSegment> Timeline(const Json& timeline) const;
  std::vector<ScopeReport> Scopes(const Json& scopes) const;
  LiveSeries Series(const Json& series) const;
  HookFigures Hook(const Json& hook) const;
  CudaReplay Replay(const Json& replay) const;
  CudaAllocatorFigures Figures(const Json& object,
                               const std::string& where) const;
  CudaRun CudaRunOf(const Json& run) const;

  JsonReader r_;
};

// context.config: the run's RunConfig as ToJson(RunConfig) writes it, with
// only the chosen model's section.
RunConfig RankReportReader::Config(const Json& c,
                                   const std::string& where) const {
  RunConfig config;
  config.source = r_.String(c, where, "source");
  config.model = r_.String(c, where, "model");
  const std::string model_where = JsonPath(where, config.model);
  if (config.model == "mlp") {
    const Json& m = r_.Object(c, where, "mlp");
    config.mlp = {
        r_.Bytes(m, model_where, "input"), r_.Bytes(m, model_where, "hidden"),
        r_.Bytes(m, model_where, "depth"), r_.Bytes(m, model_where, "output")};
  } else if (config.model == "gpt") {
    const Json& m = r_.Object(c, where, "gpt");
    config.gpt = {r_.Bytes(m, model_where, "layers"),
                  r_.Bytes(m, model_where, "d_model"),
                  r_.Bytes(m, model_where, "heads"),
                  r_.Bytes(m, model_where, "seq_len"),
                  r_.Bytes(m, model_where, "vocab"),
                  r_.Number(m, model_where, "dropout")};
    config.gpt.positions =
        Optional(m, "positions", int64_t{0},  // since 1.13
                 [&] { return r_.Bytes(m, model_where, "positions"); });
  } else if (config.model == "llama") {
    const Json& m = r_.Object(c, where, "llama");
    LlamaConfig& l = config.llama;
    l.num_hidden_layers = r_.Bytes(m, model_where, "num_hidden_layers");
    l.hidden_size = r_.Bytes(m, model_where, "hidden_size");
    l.intermediate_size = r_.Bytes(m, model_where, "intermediate_size");
    l.num_attention_heads = r_.Bytes(m, model_where, "num_attention_heads");
    l.num_key_value_heads = r_.Bytes(m, model_where, "num_key_value_heads");
    l.head_dim = r_.Bytes(m, model_where, "head_dim");
    l.vocab_size = r_.Bytes(m, model_where, "vocab_size");
    l.tie_word_embeddings = r_.Bool(m, model_where, "tie_word_embeddings");
    l.attention_bias = r_.Bool(m, model_where, "attention_bias");
    l.qkv_bias = r_.Bool(m, model_where, "qkv_bias");
    l.mlp_bias = r_.Bool(m, model_where, "mlp_bias");
    l.rms_norm_eps = r_.Number(m, model_where, "rms_norm_eps");
    l.rope_theta = r_.Number(m, model_where, "rope_theta");
    l.seq_len = r_.Bytes(m, model_where, "seq_len");
  } else if (config.model == "resnet") {
    const Json& m = r_.Object(c, where, "resnet");
    config.resnet = {r_.Bytes(m, model_where, "depth"),
                     r_.Bytes(m, model_where, "width"),
                     r_.Bytes(m, model_where, "resolution"),
                     r_.Bytes(m, model_where, "classes")};
  } else if (config.model == "program") {  // since memprof.rank/1.10
    const Json& m = r_.Object(c, where, "program");
    config.program.name = r_.String(m, model_where, "name");
  } else {
    r_.Fail(JsonPath(where, "model"), "unknown model '" + config.model +
                                          "' (expected " + kKnownModels +
                                          ", or program)");
  }
  const std::string train_where = JsonPath(where, "train");
  const Json& t = r_.Object(c, where, "train");
  config.train.micro_batch = r_.Bytes(t, train_where, "micro_batch");
  config.train.global_batch = r_.Bytes(t, train_where, "global_batch");
  if (t.contains("grad_accum")) {  // since memprof.rank/1.12
    config.train.grad_accum =
        r_.Integer(t, train_where, "grad_accum", 1, kMaxGradAccum);
  }
  config.train.steps = r_.Bytes(t, train_where, "steps");
  config.train.optimizer = r_.String(t, train_where, "optimizer");
  if (t.contains("momentum")) {  // since memprof.rank/1.5
    config.train.momentum = r_.Number(t, train_where, "momentum");
  }
  config.train.lr = r_.Number(t, train_where, "lr");
  config.train.dtype = r_.String(t, train_where, "dtype");
  if (t.contains("activation_checkpointing")) {  // since memprof.rank/1.5
    config.train.activation_checkpointing =
        r_.String(t, train_where, "activation_checkpointing");
  }
  config.train.zero_grad_set_to_none =
      r_.Bool(t, train_where, "zero_grad_set_to_none");
  config.train.seed = r_.Integer(t, train_where, "seed", 0, kMaxInt64);
  if (t.contains("device")) {  // since memprof.rank/1.2
    config.train.device = r_.String(t, train_where, "device");
  }
  if (t.contains("freeze")) {  // since memprof.rank/1.11
    config.train.freeze = r_.String(t, train_where, "freeze");
  }
  if (c.contains("lora")) {  // since memprof.rank/1.12
    const std::string lora_where = JsonPath(where, "lora");
    const Json& l = r_.Object(c, where, "lora");
    config.lora.rank = r_.Integer(l, lora_where, "rank", 0, kMaxInt64);
    config.lora.alpha = r_.Number(l, lora_where, "alpha");
    config.lora.dropout = r_.Number(l, lora_where, "dropout");
    config.lora.targets = r_.String(l, lora_where, "targets");
  }
  const std::string ddp_where = JsonPath(where, "ddp");
  const Json& d = r_.Object(c, where, "ddp");
  config.ddp.world_size =
      r_.Integer(d, ddp_where, "world_size", 1, kMaxWorldSize);
  config.ddp.bucket_cap_mb = r_.Number(d, ddp_where, "bucket_cap_mb");
  config.ddp.gradient_as_bucket_view =
      r_.Bool(d, ddp_where, "gradient_as_bucket_view");
  config.ddp.timeout_s = r_.Bytes(d, ddp_where, "timeout_s");
  if (d.contains("backend")) {  // since memprof.rank/1.2
    config.ddp.backend = r_.String(d, ddp_where, "backend");
  }
  if (d.contains("zero_stage")) {  // since memprof.rank/1.3
    config.ddp.zero_stage = r_.Integer(d, ddp_where, "zero_stage", 0, 1);
  }
  return config;
}

ZeroFigures RankReportReader::Zero(const Json& z, int world_size) const {
  const char* where = "zero";
  ZeroFigures out;
  out.stage = Int(z, where, "stage", 1, 1);
  const Json& partition = r_.Array(z, where, "partition_parameters");
  if (static_cast<int>(partition.size()) != world_size) {
    r_.Fail(JsonPath(where, "partition_parameters"),
            "has " + std::to_string(partition.size()) +
                " entries, expected one per rank (" +
                std::to_string(world_size) + ")");
  }
  for (size_t r = 0; r < partition.size(); ++r) {
    out.partition_parameters.push_back(r_.Integer(
        partition[r], JsonElement(JsonPath(where, "partition_parameters"), r),
        0, std::numeric_limits<int64_t>::max()));
  }
  out.owned_tensors = r_.Bytes(z, where, "owned_tensors");
  out.covered_once = r_.Bool(z, where, "covered_once");
  out.replicated_optimizer_state_bytes =
      r_.Bytes(z, where, "replicated_optimizer_state_bytes");
  return out;
}

ReportContext RankReportReader::Context(const Json& c) const {
  ReportContext out;
  out.world_size = Int(c, "context", "world_size", 1, kMaxWorldSize);
  out.rank = Int(c, "context", "rank", 0, out.world_size - 1);
  out.device = r_.String(c, "context", "device");
  out.backend = r_.String(c, "context", "backend");
  out.libtorch_version = r_.String(c, "context", "libtorch_version");
  if (c.contains("cuda")) {  // since memprof.rank/1.1
    const Json& cuda = r_.Object(c, "context", "cuda");
    out.cuda.compiled = r_.Bool(cuda, "context.cuda", "compiled");
    out.cuda.available = r_.Bool(cuda, "context.cuda", "available");
    out.cuda.devices = Int(cuda, "context.cuda", "devices", 0, 1 << 16);
    out.cuda.status = r_.String(cuda, "context.cuda", "status");
  }
  out.git_sha = r_.String(c, "context", "git_sha");
  out.hostname = r_.String(c, "context", "hostname");
  out.pid = r_.Integer(c, "context", "pid", 0, kMaxInt64);
  out.session_start_unix_us =
      r_.Integer(c, "context", "session_start_unix_us", 0, kMaxInt64);
  if (c.contains("cpu_threads")) {  // since memprof.rank/1.15
    out.cpu_threads = Int(c, "context", "cpu_threads", 0, kMaxCpuThreads);
  }
  out.config = Config(r_.Object(c, "context", "config"), "context.config");
  if (c.contains("config_origins")) {  // since memprof.rank/1.8
    const Json& origins = r_.Object(c, "context", "config_origins");
    for (const auto& [key, value] : origins.items()) {
      out.config.origins[key] =
          r_.String(origins, "context.config_origins", key);
    }
  }
  return out;
}

void RankReportReader::Categories(const Json& categories,
                                  RankReport& out) const {
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const std::string where = "categories." + name;
    if (IsLaterCategory(c) && !categories.contains(name)) continue;
    const Json& e = r_.Object(categories, "categories", name);
    out.categories[Index(c)] = {r_.Bytes(e, where, "measured_bytes"),
                                r_.Bytes(e, where, "peak_bytes"),
                                r_.Bytes(e, where, "predicted_bytes"),
                                r_.Bytes(e, where, "end_bytes"),
                                r_.Bytes(e, where, "allocated_bytes"),
                                r_.Bytes(e, where, "freed_bytes")};
    if (c == Category::kWeights) {
      out.buffers_bytes = r_.Bytes(e, where, "buffers_bytes");
    }
  }
}

// A moment's total is its breakdown's sum, as memprof writes it: a report
// whose total says otherwise was edited or damaged (a peak total of 1 B
// over 250 KiB of categories read as an improvement in the gate).
void RankReportReader::RequireSum(const Breakdown& breakdown, int64_t total,
                                  const std::string& where,
                                  const char* key) const {
  __int128 sum = 0;
  for (int64_t bytes : breakdown) sum += bytes;
  if (sum == total) return;
  const bool fits = sum <= std::numeric_limits<int64_t>::max();
  r_.Fail(JsonPath(where, key),
          "is " + std::to_string(total) + ", but its breakdown sums to " +
              (fits ? std::to_string(static_cast<int64_t>(sum))
                    : std::string("more than 2^63 - 1")) +
              ": the report was edited or damaged");
}

// A category's measured_bytes is its share of the steady-state peak, as
// memprof writes it: peak.breakdown's entry, and never over the category's
// own peak_bytes. A report edited otherwise made a baseline that its own
// reader refused (measured 5 B over a peak of 0).
void RankReportReader::RequireCategoriesAtPeak(const RankReport& out) const {
  for (Category c : kAllCategories) {
    const CategoryFigures& f = out.Of(c);
    const std::string where = "categories." + std::string(CategoryName(c));
    if (f.measured_bytes != out.peak.breakdown[Index(c)]) {
      r_.Fail(JsonPath(where, "measured_bytes"),
              "is " + std::to_string(f.measured_bytes) +
                  ", but peak.breakdown." + std::string(CategoryName(c)) +
                  " is " + std::to_string(out.peak.breakdown[Index(c)]) +
                  ": the report was edited or damaged");
    }
    if (f.measured_bytes > f.peak_bytes) {
      r_.Fail(JsonPath(where, "measured_bytes"),
              "is " + std::to_string(f.measured_bytes) +
                  ", over the category's own peak_bytes " +
                  std::to_string(f.peak_bytes) +
                  ": the report was edited or damaged");
    }
  }
}

PeakFigures RankReportReader::Peak(const Json& peak,
                                   const std::string& where) const {
  PeakFigures out;
  out.total_bytes = r_.Bytes(peak, where, "total_bytes");
  out.phase = PhaseOf(peak, where, "phase");
  out.step = Int(peak, where, "step");
  out.seq = Seq(peak, where, "seq");
  out.breakdown = BreakdownOf(peak, where, "breakdown");
  RequireSum(out.breakdown, out.total_bytes, where, "total_bytes");
  return out;
}

void RankReportReader::Peaks(const Json& doc, RankReport& out) const {
  const Json& peak = r_.Object(doc, "", "peak");
  out.peak = Peak(peak, "peak");
  out.steady_first_step = Int(peak, "peak", "first_step");
  out.steady_from = Optional(peak, "steady_from", out.steady_first_step,
                             [&] { return Int(peak, "peak", "steady_from"); });
  // since memprof.rank/1.13
  const Json& predicted = r_.Object(peak, "peak", "predicted");
  out.predicted_peak.total_bytes =
      r_.Bytes(predicted, "peak.predicted", "total_bytes");
  out.predicted_peak.phase = PhaseOf(predicted, "peak.predicted", "phase");
  out.predicted_peak.what = r_.String(predicted, "peak.predicted", "what");
  out.predicted_peak.breakdown =
      BreakdownOf(predicted, "peak.predicted", "breakdown");
  out.run_peak = Peak(r_.Object(doc, "", "run_peak"), "run_peak");
}

std::vector<StepReport> RankReportReader::Steps(
    const Json& steps, std::vector<StepDetail>& details) const {
  std::vector<StepReport> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string where = JsonElement("steps", i);
    const Json& s = r_.ObjectAt(steps, "steps", i);
    StepReport step;
    step.step = Int(s, where, "step", 1);
    if (step.step != static_cast<int>(i) + 1) {
      r_.Fail(JsonPath(where, "step"),
              "is " + std::to_string(step.step) + ", expected " +
                  std::to_string(i + 1) + " (steps in order from 1)");
    }
    step.steady_state = r_.Bool(s, where, "steady_state");
    step.completed = Optional(s, "completed", true,
                              [&] { return r_.Bool(s, where, "completed"); });
    step.seconds = r_.Number(s, where, "seconds");
    step.comm_seconds = Optional(s, "comm_seconds", 0.0, [&] {
      return r_.Number(s, where, "comm_seconds");
    });
    step.exchange_seconds = Optional(s, "exchange_seconds", 0.0, [&] {
      return r_.Number(s, where, "exchange_seconds");
    });
    step.recompute_seconds = Optional(s, "recompute_seconds", 0.0, [&] {
      return r_.Number(s, where, "recompute_seconds");
    });
    step.micro_batches = Optional(s, "micro_batches", 1, [&] {
      return Int(s, where, "micro_batches", 1, static_cast<int>(kMaxGradAccum));
    });
    // null: the loss was not a number (a diverged run's NaN or infinity,
    // which JSON cannot hold).
    step.loss = s.contains("loss") && s["loss"].is_null()
                    ? std::numeric_limits<double>::quiet_NaN()
                    : r_.Number(s, where, "loss");
    step.peak_bytes = r_.Bytes(s, where, "peak_bytes");
    step.peak_phase = PhaseOf(s, where, "peak_phase");
    step.peak_seq = Seq(s, where, "peak_seq");
    if (s.contains("breakdown")) {  // a kept step (always, before 1.7)
      details.push_back({step.step, BreakdownOf(s, where, "breakdown"),
                         BreakdownOf(s, where, "max_bytes"),
                         BreakdownOf(s, where, "end_bytes")});
    }
    out.push_back(step);
  }
  return out;
}

DdpFigures RankReportReader::Ddp(const Json& ddp) const {
  return {r_.Bytes(ddp, "ddp", "buckets"),
          r_.Number(ddp, "ddp", "bucket_cap_mb"),
          r_.Bool(ddp, "ddp", "gradient_as_bucket_view")};
}

std::vector<RedundancyFigures> RankReportReader::Redundancies(
    const Json& redundancy) const {
  std::vector<RedundancyFigures> out;
  for (const auto& [name, entry] : redundancy.items()) {
    const std::string where = JsonPath("redundancy", name);
    const std::optional<Category> category = CategoryFromName(name);
    if (!category) r_.Fail(where, "not a category");
    if (!entry.is_object()) {
      r_.Fail(where, "expected an object, got " + DescribeJson(entry));
    }
    RedundancyFigures figures;
    figures.category = *category;
    figures.bytes = r_.Bytes(entry, where, "bytes");
    figures.identical_across_ranks =
        r_.Bool(entry, where, "identical_across_ranks");
    figures.redundant_bytes = r_.Bytes(entry, where, "redundant_bytes");
    const Json& hashes = r_.Array(entry, where, "rank_hashes");
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (!hashes[i].is_string()) {
        r_.Fail(JsonElement(JsonPath(where, "rank_hashes"), i),
                "expected a string, got " + DescribeJson(hashes[i]));
      }
      figures.rank_hashes.push_back(hashes[i].get<std::string>());
    }
    out.push_back(std::move(figures));
  }
  return out;
}

// out_of_memory.fit: the FitAnswer's figures that its sentence uses, with
// the invariants the sentence relies on.
FitAnswer RankReportReader::Fit(const Json& fit, int64_t limit_bytes) const {
  const std::string where = "out_of_memory.fit";
  FitAnswer out;
  const std::string verdict = r_.String(fit, where, "verdict");
  bool known = false;
  for (FitVerdict v :
       {FitVerdict::kFits, FitVerdict::kActivationOverflow,
        FitVerdict::kModelStateOverflow, FitVerdict::kNotPredicted}) {
    if (verdict == FitVerdictName(v)) out.verdict = v, known = true;
  }
  if (!known) r_.Fail(JsonPath(where, "verdict"), "unknown verdict");
  out.budget_bytes = limit_bytes;
  out.world_size = r_.Integer(fit, where, "world_size", 1, kMaxWorldSize);
  out.micro_batch = r_.Integer(fit, where, "micro_batch", 1, INT32_MAX);
  out.peak_bytes = r_.Bytes(fit, where, "peak_bytes");
  out.model_state_bytes = r_.Bytes(fit, where, "model_state_bytes");
  if (out.verdict == FitVerdict::kNotPredicted) {
    out.model_state_alone_overflows = out.model_state_bytes > limit_bytes;
  }
  out.peak1_bytes = r_.Bytes(fit, where, "peak1_bytes");
  out.optimizer1_bytes =
      Optional(fit, "optimizer1_bytes", out.peak1_bytes,  // since 1.14
               [&] { return r_.Bytes(fit, where, "optimizer1_bytes"); });
  out.largest_micro_batch =
      r_.Integer(fit, where, "largest_micro_batch", 0, INT32_MAX);
  out.largest_peak_bytes = r_.Bytes(fit, where, "largest_peak_bytes");
  out.zero_stage = Int(fit, where, "zero_stage", 0, 3);
  const Json& zero = r_.Array(fit, where, "zero_peak_bytes");
  if (zero.size() != 3) {
    r_.Fail(JsonPath(where, "zero_peak_bytes"),
            "expected 3 figures (ZeRO-1, -2, -3)");
  }
  for (size_t i = 0; i < 3; ++i) {
    out.zero_peak_bytes[i + 1] =
        r_.Integer(zero[i], JsonElement(JsonPath(where, "zero_peak_bytes"), i),
                   0, kMaxInt64);
  }
  out.zero_requested_bytes = Optional(
      fit, "zero_requested_bytes", int64_t{0},  // since memprof.rank/1.14
      [&] {
        return r_.Integer(fit, where, "zero_requested_bytes", 0, kMaxInt64);
      });
  out.zero3_ranks = r_.Bytes(fit, where, "zero3_ranks");
  out.zero_stage_at_ranks = static_cast<int>(Optional(
      fit, "zero_stage_at_ranks",  // since memprof.rank/1.13
      int64_t{out.zero3_ranks > 0 ? 3 : 0},
      [&] { return r_.Integer(fit, where, "zero_stage_at_ranks", 0, 3); }));
  return out;
}

OutOfMemoryFigures RankReportReader::OutOfMemory(const Json& oom) const {
  const std::string where = "out_of_memory";
  OutOfMemoryFigures out;
  out.limit_bytes = r_.Bytes(oom, where, "limit_bytes");
  out.requested_bytes = r_.Bytes(oom, where, "requested_bytes");
  out.live_bytes = r_.Bytes(oom, where, "live_bytes");
  out.seq = r_.Bytes(oom, where, "seq");
  out.phase = PhaseOf(oom, where, "phase");
  out.step = Int(oom, where, "step");
  out.breakdown = BreakdownOf(oom, where, "breakdown");
  RequireSum(out.breakdown, out.live_bytes, where, "live_bytes");
  out.fit = Fit(r_.Object(oom, where, "fit"), out.limit_bytes);
  out.by_system = Optional(oom, "refused_by", false, [&] {  // since 1.4
    const std::string by = r_.String(oom, where, "refused_by");
    if (by != "limit" && by != "system") {
      r_.Fail(JsonPath(where, "refused_by"),
              "expected \"limit\" or \"system\", got \"" + by + "\"");
    }
    return by == "system";
  });
  return out;
}

std::vector<TimelineSegment> RankReportReader::Timeline(
    const Json& timeline) const {
  std::vector<TimelineSegment> out;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const std::string where = JsonElement("timeline", i);
    const Json& s = r_.ObjectAt(timeline, "timeline", i);
    TimelineSegment seg;
    seg.step = Int(s, where, "step");
    seg.phase = PhaseOf(s, where, "phase");
    // Since memprof.rank/1.12: one micro-batch per step before.
    const bool in_micro_batch = seg.step > 0 && (seg.phase == Phase::kInputs ||
                                                 seg.phase == Phase::kForward ||
                                                 seg.phase == Phase::kBackward);
    seg.micro_batch = Optional(s, "micro_batch", in_micro_batch ? 1 : 0, [&] {
      return Int(s, where, "micro_batch", 0, static_cast<int>(kMaxGradAccum));
    });
    seg.begin_seq = r_.Bytes(s, where, "begin_seq");
    seg.end_seq = r_.Bytes(s, where, "end_seq");
    seg.begin_us = r_.Bytes(s, where, "begin_us");
    seg.end_us = r_.Bytes(s, where, "end_us");
    seg.begin_bytes = BreakdownOf(s, where, "begin_bytes");
    seg.peak_bytes = r_.Bytes(s, where, "peak_bytes");
    seg.peak_seq = Seq(s, where, "peak_seq");
    seg.peak_breakdown = BreakdownOf(s, where, "peak_breakdown");
    seg.end_bytes = BreakdownOf(s, where, "end_bytes");
    out.push_back(seg);
  }
  return out;
}

std::vector<ScopeReport> RankReportReader::Scopes(const Json& scopes) const {
  std::vector<ScopeReport> out;
  for (size_t i = 0; i < scopes.size(); ++i) {
    const std::string where = JsonElement("scopes", i);
    const Json& s = r_.ObjectAt(scopes, "scopes", i);
    ScopeReport scope;
    scope.name = r_.String(s, where, "name");
    if (scope.name.empty()) r_.Fail(JsonPath(where, "name"), "empty");
    scope.activations_bytes = r_.Bytes(s, where, "activations_bytes");
    scope.temporaries_peak_bytes = r_.Bytes(s, where, "temporaries_peak_bytes");
    if (!r_.Member(s, where, "predicted_activations_bytes").is_null()) {
      scope.predicted_activations_bytes =
          r_.Bytes(s, where, "predicted_activations_bytes");
    }
    out.push_back(scope);
  }
  return out;
}

LiveSeries RankReportReader::Series(const Json& series) const {
  LiveSeries out;
  out.step = Int(series, "series", "step");
  const Json& seq = r_.Array(series, "series", "seq");
  for (size_t i = 0; i < seq.size(); ++i) {
    out.seq.push_back(
        r_.Integer(seq[i], JsonElement("series.seq", i), 0, kMaxInt64));
  }
  const Json& bytes = r_.Object(series, "series", "bytes");
  for (Category c : kAllCategories) {
    const std::string name(CategoryName(c));
    const std::string where = "series.bytes." + name;
    if (IsLaterCategory(c) && !bytes.contains(name)) {
      out.bytes[Index(c)].assign(seq.size(), 0);
      continue;
    }
    const Json& values = r_.Array(bytes, "series.bytes", name);
    if (values.size() != seq.size()) {
      r_.Fail(where, std::to_string(values.size()) + " values for " +
                         std::to_string(seq.size()) + " points");
    }
    for (size_t i = 0; i < values.size(); ++i) {
      out.bytes[Index(c)].push_back(
          r_.Integer(values[i], JsonElement(where, i), 0, kMaxInt64));
    }
  }
  return out;
}

CudaReplay RankReportReader::Replay(const Json& replay) const {
  CudaReplay out;
  const char* where = "cuda_replay";
  out.at_allocated_peak = Figures(replay, where);
  out.peak_reserved = r_.Bytes(replay, where, "peak_reserved_bytes");
  out.segments = r_.Bytes(replay, where, "segments");
  return out;
}

CudaAllocatorFigures RankReportReader::Figures(const Json& f,
                                               const std::string& where) const {
  return {r_.Bytes(f, where, "requested_bytes"),
          r_.Bytes(f, where, "allocated_bytes"),
          r_.Bytes(f, where, "reserved_bytes"),
          r_.Bytes(f, where, "inactive_split_bytes")};
}

CudaRun RankReportReader::CudaRunOf(const Json& run) const {
  const std::string where = "cuda_run";
  CudaRun out;
  out.device = Int(run, where, "device", 0, 1 << 16);
  out.device_name = r_.String(run, where, "device_name");
  out.device_total = r_.Bytes(run, where, "device_total_bytes");
  const auto figures = [&](const Json& object, const std::string& at,
                           const char* key) {
    return Figures(r_.Object(object, at, key), JsonPath(at, key));
  };
  out.at_allocated_peak = figures(run, where, "at_allocated_peak");
  out.peak_reserved = r_.Bytes(run, where, "peak_reserved_bytes");
  out.allocator_peak_allocated =
      r_.Bytes(run, where, "allocator_peak_allocated_bytes");
  out.allocator_peak_reserved =
      r_.Bytes(run, where, "allocator_peak_reserved_bytes");
  out.predicted_at_peak = figures(run, where, "predicted_at_peak");
  out.predicted_peak_reserved =
      r_.Bytes(run, where, "predicted_peak_reserved_bytes");
  out.before_session_allocated =
      r_.Bytes(run, where, "before_session_allocated_bytes");
  const Json& checks = r_.Array(run, where, "checks");
  for (size_t i = 0; i < checks.size(); ++i) {
    const std::string at = JsonElement(JsonPath(where, "checks"), i);
    const Json& c = r_.ObjectAt(checks, JsonPath(where, "checks"), i);
    CudaSelfCheck check;
    check.step = Int(c, at, "step");
    check.phase = PhaseOf(c, at, "phase");
    check.memprof = figures(c, at, "memprof");
    check.allocator = figures(c, at, "allocator");
    out.checks.push_back(check);
  }
  const Json& moments = r_.Array(run, where, "moments");
  for (size_t i = 0; i < moments.size(); ++i) {
    const std::string at = JsonElement(JsonPath(where, "moments"), i);
    const Json& m = r_.ObjectAt(moments, JsonPath(where, "moments"), i);
    out.moments.push_back({r_.String(m, at, "moment"),
                           r_.Bytes(m, at, "device_used_bytes"),
                           r_.Bytes(m, at, "reserved_bytes"),
                           r_.Bytes(m, at, "allocated_bytes")});
  }
  out.mismatches = r_.Bytes(run, where, "mismatches");
  out.first_mismatch = r_.String(run, where, "first_mismatch");
  out.memory_limit_bytes = r_.Bytes(run, where, "memory_limit_bytes");
  if (const auto oom = run.find("out_of_memory");
      oom != run.end() && !oom->is_null()) {
    const std::string at = JsonPath(where, "out_of_memory");
    out.out_of_memory = true;
    out.oom_requested_bytes = r_.Bytes(*oom, at, "requested_bytes");
    out.oom_device_free_bytes = r_.Bytes(*oom, at, "device_free_bytes");
    out.at_out_of_memory = figures(*oom, at, "at");
  }
  return out;
}

HookFigures RankReportReader::Hook(const Json& hook) const {
  HookFigures out;
  out.installed = r_.Bool(hook, "hook", "installed");
  out.allocations = r_.Bytes(hook, "hook", "allocations");
  out.allocated_bytes = r_.Bytes(hook, "hook", "allocated_bytes");
  out.freed_bytes = r_.Bytes(hook, "hook", "freed_bytes");
  out.ownership_not_found = r_.Bytes(hook, "hook", "ownership_not_found");
  out.ownership_conflicts = r_.Bytes(hook, "hook", "ownership_conflicts");
  return out;
}

}  // namespace

ReportContext ContextFromJson(const Json& context, const std::string& origin) {
  return RankReportReader(origin).ContextOf(context);
}

RankReport RankReportFromJson(const Json& doc, const std::string& origin) {
  return RankReportReader(origin).Read(doc);
}

RankReport ParseRankReport(const std::string& text, const std::string& origin) {
  return RankReportFromJson(JsonReader(origin, kRemedy).Parse(text), origin);
}

std::string ReadRankReportText(const std::string& path) {
  return ReadRegularFile(path, "rank report", kMaxRankReportBytes, kRemedy);
}

RankReport ReadRankReport(const std::string& path) {
  return ParseRankReport(ReadRankReportText(path), path);
}

}  // namespace memprof
