#include "profiler/cli/predict_command.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "profiler/base/errors.h"
#include "profiler/base/human_bytes.h"
#include "profiler/base/run_categories.h"
#include "profiler/base/text_table.h"
#include "profiler/predict/cuda_prediction.h"
#include "profiler/predict/fit_search.h"
#include "profiler/report/breakdown_json.h"

namespace memprof {
namespace {

using Json = nlohmann::ordered_json;

const char* KindName(RowKind kind) {
  switch (kind) {
    case RowKind::kParameter:
      return "parameter";
    case RowKind::kBuffer:
      return "buffer";
    case RowKind::kSaved:
      return "saved";
    case RowKind::kRecomputed:
      return "recomputed";
    case RowKind::kInput:
      return "input";
    case RowKind::kWorkspace:
      return "workspace";
    case RowKind::kWeightCast:
      return "weight_cast";
    case RowKind::kRecomputedCast:
      return "recomputed_cast";
  }
  return "?";
}

Json MomentJson(const PredictedMoment& m) {
  return Json{{"phase", PhaseName(m.phase)},
              {"what", m.what},
              {"total_bytes", m.Total()},
              {"breakdown", BreakdownJson(m.bytes)}};
}

// The candidate moments the table has: early backward and the optimizer
// step always, the output projection's, a block's and late backward when
// the table has rows for them.
Json Moments(const Prediction& p) {
  Json moments = Json::array();
  for (const PredictedMoment* m : p.Moments()) {
    if (m->phase != Phase::kIdle) moments.push_back(MomentJson(*m));
  }
  return moments;
}

std::string Formula(Category c, const Prediction& p, const RunConfig& config) {
  const SizeTable& t = p.table;
  auto rows = [&](RowKind kind) {
    int n = 0;
    for (const SizeRow& row : t.rows) n += row.kind == kind;
    return std::to_string(n);
  };
  const BytesPerParameter per = BytesPerParameterOf(config);
  const std::string e = std::to_string(per.weights);
  const std::string element = per.weights == 2 ? "bf16" : "fp32";
  // With train.freeze, gradients, state and buckets count the trained
  // parameters P_t only.
  const bool frozen = p.trained_parameters < p.parameters;
  const std::string trained =
      frozen ? "P_t (P_t = " + GroupedInteger(p.trained_parameters) +
                   " trained of " + GroupedInteger(p.parameters) + ")"
             : "P";
  switch (c) {
    case Category::kWeights:
      return e + "P" +
             std::string(p.buffer_bytes > 0
                             ? " + module buffers (" +
                                   HumanBytes(p.buffer_bytes) + ")"
                             : "");
    case Category::kGradients:
      if (FreshGradientsBesideBuckets(config)) {  // Note [Accumulated ...]
        return std::to_string(2 * per.weights) + trained + ": one " + element +
               " gradient per " + (frozen ? "trained parameter" : "parameter") +
               ", twice in backward: fresh beside its bucket view "
               "(accumulation, set_to_none, gradient_as_bucket_view)";
      }
      return e + trained + ": one " + element + " gradient per " +
             (frozen ? "trained parameter" : "parameter");
    case Category::kWeightCasts:
      if (per.casts == 0) return "0: no autocast";
      return "2 bytes per element of the weights matmuls and convolutions "
             "use (" +
             rows(RowKind::kWeightCast) + " + " +
             rows(RowKind::kRecomputedCast) +
             " rerun copies), most live at once";
    case Category::kOptimizerState: {
      const bool sgd = config.train.optimizer == "sgd";
      if (config.train.optimizer == "none") {
        return "0: no optimizer tracked";
      }
      if (sgd && config.train.momentum == 0) {
        return "0: SGD without momentum keeps no state";
      }
      const std::string x = std::to_string(per.optimizer);
      if (!p.owned_parameters.empty()) {
        return x + "P_" + std::to_string(p.rank) + ": ZeRO-1, rank " +
               std::to_string(p.rank) + "'s partition, P_" +
               std::to_string(p.rank) + " = " +
               GroupedInteger(p.owned_parameters[p.rank]) + " of " +
               GroupedInteger(p.parameters);
      }
      return sgd ? x + trained + ": SGD's momentum buffer, x1"
                 : x + trained + ": " + config.train.optimizer +
                       " exp_avg + exp_avg_sq, x2";
    }
    case Category::kDdpBuckets:
      return config.ddp.gradient_as_bucket_view
                 ? "0: gradient_as_bucket_view, the gradients are the buckets"
                 : e + trained + ": Reducer's flat buckets, x1";
    case Category::kActivations:
      if (config.train.activation_checkpointing == "blocks") {
        return "checkpointed: " + HumanBytes(t.Bytes(RowKind::kSaved)) +
               " held from forward (" + rows(RowKind::kSaved) +
               " tensors, one input per block), at most " +
               HumanBytes(p.bytes[Index(Category::kActivations)]) +
               " with a block's rerun";
      }
      return rows(RowKind::kSaved) + " saved tensors at micro-batch " +
             std::to_string(p.micro_batch);
    case Category::kInputs:
      return rows(RowKind::kInput) + " batch tensors at micro-batch " +
             std::to_string(p.micro_batch);
    case Category::kTemporaries:
      return "live at the predicted peak (" + p.Peak().what + ")";
    case Category::kUnattributed:
    case Category::kPending:
      return "0";
  }
  return "";
}

Json CudaJson(const CudaPrediction& cuda, int64_t outside_allocator_bytes) {
  return Json{{"requested_bytes", cuda.at_peak.requested},
              {"allocated_bytes", cuda.at_peak.allocated},
              {"reserved_bytes", cuda.at_peak.reserved},
              {"inactive_split_bytes", cuda.at_peak.inactive_split},
              {"peak_reserved_bytes", cuda.peak_reserved},
              {"outside_allocator_bytes", outside_allocator_bytes},
              {"device_bytes", cuda.peak_reserved + outside_allocator_bytes}};
}

}  // namespace

// ZeRO-1: P/N, the share of a perfect partition (rounded up).
int64_t IdealShare(const Prediction& p) {
  return (p.parameters + p.world_size - 1) / p.world_size;
}

// ZeRO-1: each rank's optimizer state, from its partition; one prediction
// for each distinct share (Note [ZeRO-1 partition]), not one per rank.
std::vector<int64_t> PartitionStateBytes(const Prediction& p,
                                         const RunConfig& config) {
  const std::map<int, std::vector<int64_t>> owned = OwnedRowBytes(p);
  std::map<std::vector<int64_t>, int64_t> state_of_share;
  const std::vector<int64_t> none;
  std::vector<int64_t> bytes;
  for (int r = 0; r < static_cast<int>(p.world_size); ++r) {
    const auto it = owned.find(r);
    const std::vector<int64_t>& share = it == owned.end() ? none : it->second;
    auto known = state_of_share.find(share);
    if (known == state_of_share.end()) {
      known =
          state_of_share
              .emplace(
                  share,
                  Predict(config, r).bytes[Index(Category::kOptimizerState)])
              .first;
    }
    bytes.push_back(known->second);
  }
  return bytes;
}

namespace {

// The model state the whole group holds: each rank's (under ZeRO-1 each
// with its own partition of the optimizer state).
int64_t GroupStateBytes(const Prediction& p, const RunConfig& config) {
  const int64_t state = ModelStateBytes(p.bytes);
  if (p.owned_parameters.empty()) return state * p.world_size;
  const int64_t replicated = state - p.bytes[Index(Category::kOptimizerState)];
  int64_t group = replicated * p.world_size;
  for (int64_t bytes : PartitionStateBytes(p, config)) group += bytes;
  return group;
}

}  // namespace

Json ToJson(const Prediction& p, const RunConfig& config,
            int64_t outside_allocator_bytes) {
  Json categories = Json::object();
  for (Category c : kAllCategories) {
    categories[CategoryName(c)] = Json{{"predicted_bytes", p.bytes[Index(c)]},
                                       {"compared_with", ComparedFigure(c)}};
  }
  Json table = Json::array();
  for (const SizeRow& row : p.table.rows) {
    table.push_back(Json{{"name", row.name},
                         {"kind", KindName(row.kind)},
                         {"frozen", row.frozen},
                         {"adapter", row.adapter},
                         {"shape", row.shape},
                         {"terms", row.terms},
                         {"dtype", DtypeName(row.dtype)},
                         {"bytes", row.Bytes()}});
  }
  const int64_t state = ModelStateBytes(p.bytes);
  return Json{
      {"schema", kPredictionSchema},
      {"config", ToJson(config)},
      {"world_size", p.world_size},
      {"rank", p.rank},
      {"micro_batch", p.micro_batch},
      {"parameters", p.parameters},
      {"trained_parameters", p.trained_parameters},
      {"buffer_bytes", p.buffer_bytes},
      {"categories", categories},
      {"peak", MomentJson(p.Peak())},
      {"moments", Moments(p)},
      {"model_state",
       {{"bytes_per_rank", state},
        {"without_buckets_bytes",
         state - p.bytes[Index(Category::kDdpBuckets)]},
        {"bytes_per_parameter", p.model_state_bytes_per_parameter},
        {"replicated_on_ranks", p.world_size},
        {"group_bytes", GroupStateBytes(p, config)}}},
      {"zero",
       {{"world_size", p.world_size},
        {"plain_bytes", p.zero.plain_bytes},
        {"stage1_bytes", p.zero.stage1_bytes},
        {"stage2_bytes", p.zero.stage2_bytes},
        {"stage3_bytes", p.zero.stage3_bytes},
        {"duplicated_bytes", p.zero.duplicated_bytes}}},
      {"zero_partition", p.owned_parameters.empty()
                             ? Json(nullptr)
                             : Json{{"parameters_by_rank", p.owned_parameters},
                                    {"ideal_parameters", IdealShare(p)},
                                    {"optimizer_state_bytes_by_rank",
                                     PartitionStateBytes(p, config)}}},
      {"cuda", CudaJson(PredictOnCuda(p, config), outside_allocator_bytes)},
      {"symbols", p.table.symbols},
      {"table", table},
  };
}

std::string FormatPrediction(const Prediction& p, const RunConfig& config,
                             int64_t outside_allocator_bytes) {
  std::ostringstream out;
  const bool zero1 = !p.owned_parameters.empty();
  out << "memprof predict: " << config.model;
  if (!config.source.empty()) out << " (" << config.source << ")";
  out << ", P = " << GroupedInteger(p.parameters) << " parameters, micro-batch "
      << p.micro_batch << " per rank, " << p.world_size << " rank"
      << (p.world_size == 1 ? "" : "s");
  if (config.train.grad_accum > 1) {
    out << ", " << config.train.grad_accum
        << " micro-batches accumulated per optimizer step (global batch "
        << GlobalBatch(config)
        << "): activations follow the micro-batch, model state does not";
  }
  out << "\n"
      << (zero1 ? "rank " + std::to_string(p.rank) +
                      ", the busiest: under ZeRO-1 the ranks differ only in "
                      "their partition of the optimizer state (and its "
                      "update workspace)\n\n"
                : std::string("per rank; every rank holds the same model "
                              "state, only activations and inputs follow the "
                              "micro-batch\n\n"));
  using Align = TextTable::Align;
  TextTable table({{"category", Align::kLeft},
                   {"predicted", Align::kRight},
                   {"formula", Align::kLeft}});
  // Note [Categories a run can fill]
  for (Category c : CategoriesOf(config)) {
    table.AddRow({std::string(CategoryName(c)), HumanBytes(p.bytes[Index(c)]),
                  Formula(c, p, config)});
  }
  const PredictedMoment& peak = p.Peak();
  table.AddRow({"steady-state peak", HumanBytes(peak.Total()), peak.what});
  out << table.Render() << "\n";

  // The bytes per parameter of model state, and what replication costs.
  const int64_t adam = p.bytes[Index(Category::kOptimizerState)];
  const int64_t replicated = p.bytes[Index(Category::kWeights)] +
                             p.bytes[Index(Category::kGradients)] + adam;
  const int64_t buckets = p.bytes[Index(Category::kDdpBuckets)];
  const int64_t state = replicated + buckets;
  char per_param[64];
  std::snprintf(per_param, sizeof per_param, "%.2f",
                p.model_state_bytes_per_parameter);
  const BytesPerParameter per = BytesPerParameterOf(config);
  const std::string split =
      TrainedFrozenSentence(p.parameters, p.trained_parameters, config,
                            p.bytes[Index(Category::kDdpBuckets)] > 0);
  out << "model state: " << per_param << " bytes per parameter per rank (";
  if (split.empty()) {
    out << BytesPerParameterNote(config) << "; weights " << per.weights
        << " + gradients " << per.gradients << " + optimizer "
        << (p.parameters ? adam / p.parameters : 0) << " = "
        << HumanBytes(replicated) << "; DDP buckets "
        << (p.parameters ? buckets / p.parameters : 0) << " = "
        << HumanBytes(buckets);
  } else {
    out << split << ": " << HumanBytes(replicated) << " + DDP buckets "
        << HumanBytes(buckets);
  }
  out << "): " << HumanBytes(state);
  if (zero1) {
    out << " on rank " << p.rank
        << ": ZeRO-1 gives each rank one partition of the optimizer state "
           "and replicates the rest; the "
        << Plural(p.world_size, "rank")
        << (p.world_size == 1 ? " holds " : " hold ")
        << HumanBytes(GroupStateBytes(p, config)) << " in all";
  } else {
    out << " per rank, at any world size: data parallelism does not shrink "
           "it";
    if (p.world_size > 1) {
      out << "; the " << p.world_size << " ranks hold " << p.world_size
          << " copies, " << HumanBytes(GroupStateBytes(p, config)) << " in all";
    }
  }
  out << "\n";
  if (p.world_size > 1) {  // at one rank there is nothing to shard
    const ZeroPricing& z = p.zero;
    out << "at " << p.world_size
        << " ranks, weights + gradients + optimizer state per rank: plain "
        << HumanBytes(z.plain_bytes) << ", ZeRO-1 "
        << HumanBytes(z.stage1_bytes) << ", ZeRO-2 "
        << HumanBytes(z.stage2_bytes) << ", ZeRO-3 "
        << HumanBytes(z.stage3_bytes) << "; plain replication holds "
        << HumanBytes(z.duplicated_bytes) << " in duplicate across the group\n";
  }
  if (!p.owned_parameters.empty()) {
    const std::vector<int64_t> state_bytes = PartitionStateBytes(p, config);
    out << "ZeRO-1 partition (largest parameter first, to the least-loaded "
           "rank): ";
    // A run of ranks that own nothing is one entry ("ranks 6-1023").
    for (size_t r = 0; r < p.owned_parameters.size();) {
      size_t last = r;
      while (p.owned_parameters[r] == 0 &&
             last + 1 < p.owned_parameters.size() &&
             p.owned_parameters[last + 1] == 0) {
        ++last;
      }
      out << (r ? "; " : "")
          << (last > r ? "ranks " + std::to_string(r) + "-" +
                             std::to_string(last) + " each"
                       : "rank " + std::to_string(r))
          << " " << GroupedInteger(p.owned_parameters[r]) << " parameters, "
          << HumanBytes(state_bytes[r]) << " of optimizer state";
      r = last + 1;
    }
    out << "; ideal P/N = " << GroupedInteger(IdealShare(p)) << " parameters\n";
  }
  if (config.train.device != "cuda") {
    out << "on a GPU: add --train.device cuda for what the CUDA caching "
           "allocator reserves and the memory outside it\n";
    return out.str();
  }
  const CudaPrediction cuda = PredictOnCuda(p, config);
  out << "on a GPU (the CUDA caching allocator's rules applied to these "
         "tensors): at the steady-state peak "
      << HumanBytes(cuda.at_peak.allocated) << " allocated ("
      << HumanBytes(cuda.at_peak.requested) << " requested, rounded up), "
      << HumanBytes(cuda.at_peak.reserved) << " reserved ("
      << HumanBytes(cuda.at_peak.inactive_split)
      << " of it free in split segments); at most "
      << HumanBytes(cuda.peak_reserved)
      << " reserved over the first two steps; with "
      << HumanBytes(outside_allocator_bytes)
      << " outside the allocator (the CUDA context, the libraries' "
         "workspaces, NCCL's buffers: "
      << (outside_allocator_bytes == kDefaultOutsideAllocatorBytes
              ? "the default allowance, "
              : "")
      << "--gpu-outside-allocator), the GPU needs "
      << HumanBytes(cuda.peak_reserved + outside_allocator_bytes)
      << " per rank\n";
  out << MathPathAttentionNote(config, MicroBatch(config));
  return out.str();
}

std::string FormatSizeTable(const SizeTable& table) {
  using Align = TextTable::Align;
  TextTable text({{"tensor", Align::kLeft},
                  {"kind", Align::kLeft},
                  {"shape", Align::kLeft},
                  {"dtype", Align::kLeft},
                  {"bytes", Align::kRight}});
  for (const SizeRow& row : table.rows) {
    text.AddRow({row.name,
                 row.frozen    ? "parameter, frozen"
                 : row.adapter ? "parameter, adapter"
                               : KindName(row.kind),
                 row.terms, DtypeName(row.dtype), GroupedInteger(row.Bytes())});
  }
  return "size table (" + table.symbols + ")\n" + text.Render();
}

int RunPredictCommand(const PredictArgs& args) {
  const Prediction prediction = PredictBusiestRank(args.config);
  if (args.json) {
    std::cout
        << ToJson(prediction, args.config, args.outside_allocator_bytes).dump(2)
        << "\n";
    return kExitOk;
  }
  std::cout << FormatPrediction(prediction, args.config,
                                args.outside_allocator_bytes);
  if (args.table) std::cout << "\n" << FormatSizeTable(prediction.table);
  return kExitOk;
}

}  // namespace memprof
