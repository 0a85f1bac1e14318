// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/estimate_settings.h"

#include <cmath>
#include <stdexcept>

#include "config/run_schema.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "estimate/split_backward_schedules.h"

namespace shardscope {

namespace {
std::string quoted(std::string_view text) {
  std::string out = "'";  // built in steps: GCC 12 warns falsely (-Wrestrict) on "'" + std::string(...)
  out += text;
  return out += "'";
}

// The command line's limits on --micro-batch and --accum (app/cli_estimate.cpp).
constexpr std::int64_t kMaxDerivedCount = 1 << 24;

// A micro-batch or accumulation count derived from the global batch, refused
// (naming the file's key) when it is more than the command line would take, never narrowed.
int derived_count(std::int64_t value, const std::string& what, const std::string& flag) {
  if (value > kMaxDerivedCount)
    throw ConfigError(what + " " + std::to_string(value) + ", more than " + flag + " takes (at most " +
                      std::to_string(kMaxDerivedCount) + ")");
  return static_cast<int>(value);
}

// DeepSpeed: train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp
// (times the pipeline micro-batches m when there are several). With one of micro-batch and
// accum unset, it follows from the other; with both set, they must agree, unless a later
// source (the command line, `command_line_wins`) changed the shape on purpose.
void apply_global_batch(EstimateSettings& s, std::int64_t g, const std::string& origin, bool micro_set, bool accum_set,
                        bool command_line_wins, std::vector<std::string>* notes) {
  const std::int64_t dp = static_cast<std::int64_t>(s.layout.dp()) * s.micro_batches;
  const std::string dp_text =
      "dp " + std::to_string(s.layout.dp()) + (s.micro_batches > 1 ? " x m " + std::to_string(s.micro_batches) : "");
  const std::string head = origin + " " + std::to_string(g);
  if (g < 1) throw ConfigError(origin + ": must be at least 1 (got " + std::to_string(g) + ")");
  if (micro_set && !accum_set) {
    const auto per_accum = product_if_fits(s.micro_batch_size, dp);  // past 64 bits: divides nothing
    if (!per_accum || g % *per_accum != 0)
      throw ConfigError(head + " is not a multiple of micro-batch " + std::to_string(s.micro_batch_size) + " x " +
                        dp_text);
    s.accum = derived_count(g / *per_accum, head + " gives gradient accumulation steps", "--accum");
  } else if (accum_set && !micro_set) {
    const auto per_micro = product_if_fits(s.accum, dp);
    if (!per_micro || g % *per_micro != 0)
      throw ConfigError(head + " is not a multiple of accum " + std::to_string(s.accum) + " x " + dp_text);
    s.micro_batch_size = derived_count(g / *per_micro, head + " gives a micro-batch per rank of", "--micro-batch");
  } else if (!micro_set && !accum_set) {
    if (g % dp != 0) throw ConfigError(head + " is not a multiple of " + dp_text);
    s.micro_batch_size = derived_count(g / dp, head + " gives a micro-batch per rank of", "--micro-batch");
  } else if (const auto total = product_if_fits(std::int64_t{s.micro_batch_size} * s.accum, dp); total != g) {
    const std::string product_text = "micro-batch " + std::to_string(s.micro_batch_size) + " x accum " +
                                     std::to_string(s.accum) + " x " + dp_text + " = " +
                                     (total ? std::to_string(*total) : "more than 2^63");
    if (!command_line_wins) throw ConfigError(head + " does not equal " + product_text);
    if (notes != nullptr) notes->push_back(head + " ignored: " + product_text);
  }
}
}  // namespace

std::string_view recompute_name(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

Recompute parse_recompute(std::string_view text, std::string_view field) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  throw ConfigError(std::string(field) + ": " + quoted(text) + " is not one of none, selective, full");
}

std::string_view activation_mode_name(ActivationMode mode) {
  return mode == ActivationMode::shardscope ? "shardscope" : "formula";
}

ActivationMode parse_activation_mode(std::string_view text, std::string_view field) {
  if (text == "shardscope") return ActivationMode::shardscope;
  if (text == "formula") return ActivationMode::formula;
  throw ConfigError(std::string(field) + ": " + quoted(text) + " is not one of shardscope, formula");
}

namespace {
// Messages name fields as {key}.
void require_in(bool ok, const std::string& key, const std::string& range, std::int64_t got) {
  if (!ok)
    throw FieldError("{" + key + "} must be " + range + " (got " + std::to_string(got) + ")",
                     "{" + key + "} 必须" + range + "（实际为 " + std::to_string(got) + "）");
}

// An axis against its schema row's range on the estimator's surfaces (config/run_schema.h): a
// planner looks at clusters the engine cannot run, so dp and pp go far beyond a run's.
void require_axis(const Layout& layout, Axis axis) {
  const RunField row = field_on(run_field(axis_name(axis)), surface::estimate);
  const int got = layout[axis];
  require_in(got >= row.min && got <= row.max, std::string(row.key),
             "between " + std::to_string(row.min) + " and " + std::to_string(row.max), got);
}

// Expert parallelism borrows dp ranks (groups of ep consecutive ones), as a run does
// (run_config.cpp); the experts' split is checked with the model (estimate_memory).
void check_expert_parallel(const EstimateSettings& s) {
  const RunField row = field_on(run_field("ep"), surface::estimate);
  const int ep = s.expert_parallel, dp = s.layout.dp();
  require_in(ep >= row.min && ep <= row.max, "ep",
             "between " + std::to_string(row.min) + " and " + std::to_string(row.max), ep);
  if (dp % ep != 0)
    throw FieldError("{ep} " + std::to_string(ep) + " does not divide {dp} " + std::to_string(dp) +
                         " (expert parallelism groups ep consecutive data-parallel ranks)",
                     "{ep} " + std::to_string(ep) + " 不能整除 {dp} " + std::to_string(dp) +
                         "（专家并行把 ep 个相邻的数据并行 rank 分为一组）");
  if (ep > 1 && (s.zero_stage > 1 || s.dp_mode == DataParallelMode::naive))  // as a run refuses them
    throw FieldError("{ep} " + std::to_string(ep) +
                         " is modelled with DDP or ZeRO-1 ({zero} 0 or 1), as the engine trains it (got " +
                         (s.dp_mode == DataParallelMode::naive ? std::string("{dp_mode} naive")
                                                               : "{zero} " + std::to_string(s.zero_stage)) +
                         ")",
                     "{ep} " + std::to_string(ep) +
                         " 只按 DDP 或 ZeRO-1（{zero} 0 或 1）建模，与引擎的训练方式一致（实为 " +
                         (s.dp_mode == DataParallelMode::naive ? std::string("{dp_mode} naive")
                                                               : "{zero} " + std::to_string(s.zero_stage)) +
                         "）");
  // ZeRO-1 shards the experts apart from the dense parameters; the split is counted without tensor parallelism.
  if (ep > 1 && s.zero_stage == 1 && s.layout.tp() > 1)
    throw FieldError("{ep} " + std::to_string(ep) + " with {zero} 1 is modelled without tensor parallelism (got {tp} " +
                         std::to_string(s.layout.tp()) + ")",
                     "{ep} " + std::to_string(ep) + " 与 {zero} 1 只在无张量并行时建模（实为 {tp} " +
                         std::to_string(s.layout.tp()) + "）");
}

// ZB-V as a run refuses it (run_config.cpp, validate_zb_v): two stages or more,
// the V's warm-up of 2p - 1 micro-batches, one context-parallel rank.
void check_zb_v(const EstimateSettings& s) {
  const int p = s.layout.pp(), m = s.micro_batches;
  const std::string pp = std::to_string(p);
  if (p < 2)
    throw FieldError("{schedule} zb-v needs {pp} 2 or more (got " + pp + ")",
                     "{schedule} zb-v 需要 {pp} 至少为 2（实为 " + pp + "）");
  if (m < 2 * p - 1)
    throw FieldError("{schedule} zb-v needs {micro_batches} at least 2 x {pp} - 1 = " + std::to_string(2 * p - 1) +
                         " (got " + std::to_string(m) + " with {pp} " + pp +
                         "): stage 0 runs 2p - 1 forwards down the V before the first micro-batch comes back up to it",
                     "{schedule} zb-v 需要 {micro_batches} 至少为 2 × {pp} - 1 = " + std::to_string(2 * p - 1) +
                         "（实为 " + std::to_string(m) + "，{pp} 为 " + pp +
                         "）：第一个微批次沿 V 回到阶段 0 之前，阶段 0 要先做 2p - 1 次前向");
  if (s.layout.cp() > 1)
    throw FieldError("{schedule} zb-v with {cp} " + std::to_string(s.layout.cp()) +
                         " is not estimated (nor trained: not built together yet); use {cp} 1",
                     "{schedule} zb-v 与 {cp} " + std::to_string(s.layout.cp()) +
                         " 的组合尚未能估算（也尚未能训练：尚未一起实现）；请用 {cp} 1");
}

// Megatron-LM's overlaps as its arguments.py asserts them: --tp-comm-overlap needs sequence
// parallelism, and Transformer Engine's userbuffers reach only the GPUs of one node
// (TransformerEngine #1071); --overlap-param-gather needs the distributed optimizer (ZeRO-1/2).
void check_overlap_rules(const EstimateSettings& s) {
  const std::string tp = std::to_string(s.layout.tp()), node = std::to_string(s.gpus_per_node);
  for (const auto& [given, key] : {std::pair{s.tp_comm_overlap, "tp_comm_overlap"}, std::pair{s.async_tp, "async_tp"},
                                   std::pair{s.overlap_param_gather, "overlap_param_gather"}})
    if (given && !s.measured_kernels)
      throw FieldError(
          std::string("{") + key +
              "} is priced by the kernel time model only ({time_model} kernels); the flat model "
              "overlaps no collective",
          std::string("{") + key + "} 只由 kernels 时间模型计价（{time_model} kernels）；flat 模型不重叠任何集合通信");
  if (s.tp_comm_overlap && !s.sequence_parallel)
    throw FieldError(
        "{tp_comm_overlap} overlaps sequence parallelism's all-gathers and reduce-scatters: it needs "
        "{sequence_parallel}",
        "{tp_comm_overlap} 重叠的是序列并行的 all-gather 与 reduce-scatter：需要 {sequence_parallel}");
  if (s.tp_comm_overlap && s.layout.tp() > s.gpus_per_node)
    throw FieldError("{tp_comm_overlap} runs inside one node (Transformer Engine's userbuffers): {tp} " + tp +
                         " spans more than {gpus_per_node} " + node,
                     "{tp_comm_overlap} 只在一个节点内运行（Transformer Engine 的 userbuffers）：{tp} " + tp +
                         " 超出了 {gpus_per_node} " + node);
  if (s.async_tp && s.tp_comm_overlap)
    throw FieldError("{async_tp} and {tp_comm_overlap} are two ways to run the same overlap: give one",
                     "{async_tp} 与 {tp_comm_overlap} 是同一种重叠的两种实现：只给一个");
  // AsyncTP is a pass of PyTorch Inductor's (torch/_inductor/fx_passes/micro_pipeline_tp.py): eager runs no pass.
  if (s.async_tp && s.eager_runtime)
    throw FieldError("{async_tp} is a torch.compile pass (Inductor's micro-pipeline TP): {runtime} eager runs none",
                     "{async_tp} 是 torch.compile 的一个编译步骤（Inductor 的 micro-pipeline TP）：{runtime} eager "
                     "不运行它");
  if (s.async_tp && !s.sequence_parallel)
    throw FieldError(
        "{async_tp} fuses sequence parallelism's all-gathers and reduce-scatters: it needs {sequence_parallel}",
        "{async_tp} 融合的是序列并行的 all-gather 与 reduce-scatter：需要 {sequence_parallel}");
  // AsyncTP's collectives copy through symmetric memory, which one host's GPUs map
  // (torch/distributed/_symmetric_memory/__init__.py refuses ranks "on different hosts").
  if (s.async_tp && s.layout.tp() > s.gpus_per_node)
    throw FieldError(
        "{async_tp} runs inside one node (symmetric memory): {tp} " + tp + " spans more than {gpus_per_node} " + node,
        "{async_tp} 只在一个节点内运行（对称内存）：{tp} " + tp + " 超出了 {gpus_per_node} " + node);
  if (s.overlap_param_gather && s.zero_stage != 1 && s.zero_stage != 2)
    throw FieldError(
        "{overlap_param_gather} hides the distributed optimizer's all-gather: it needs {zero} 1 or 2 (got " +
            std::to_string(s.zero_stage) + ")",
        "{overlap_param_gather} 隐藏的是分布式优化器的 all-gather：需要 {zero} 1 或 2（实为 " +
            std::to_string(s.zero_stage) + "）");
}

// FP8 linears are priced by the kernel model only, as mixed precision runs them (a 16-bit copy cast to
// FP8); FSDP's FP8 all-gather is the sharded parameters' gather of those weights.
void check_float8(const EstimateSettings& s) {
  if (s.float8_linears && s.precision == Precision::fp32)
    throw FieldError("{float8} tensorwise casts 16-bit linears to FP8: it needs {precision} bf16 or fp16 (got fp32)",
                     "{float8} tensorwise 把 16 位线性层转换为 FP8：需要 {precision} bf16 或 fp16（实为 fp32）");
  if (s.float8_linears && !s.measured_kernels)
    throw FieldError(
        "{float8} is priced by the kernel time model only ({time_model} kernels); the flat model runs "
        "every FLOP at one fraction of the 16-bit peak",
        "{float8} 只由 kernels 时间模型计价（{time_model} kernels）；flat 模型把所有 FLOP 都按 16 位峰值的"
        "同一比例计算");
  if (s.float8_all_gather && !s.float8_linears)
    throw FieldError("{float8_all_gather} gathers the FP8 linears' weights: it needs {float8} tensorwise",
                     "{float8_all_gather} 以 FP8 收集 FP8 线性层的权重：需要 {float8} tensorwise");
  if (s.float8_all_gather && s.zero_stage == 0)
    throw FieldError(
        "{float8_all_gather} is the sharded parameters' all-gather in FP8: it needs {zero} 1, 2 or 3 "
        "(got 0: DDP gathers no parameters)",
        "{float8_all_gather} 是分片参数以 FP8 进行的 all-gather：需要 {zero} 1、2 或 3"
        "（实为 0：DDP 不收集参数）");
}

// PyTorch FSDP's MixedPrecision(reduce_dtype=torch.float32) casts the gradients for its reduce-scatter:
// ZeRO's collective. DDP all-reduces them in the dtype backward made (fp32 under --autocast).
void check_reduce_dtype(const EstimateSettings& s) {
  if (!s.fp32_reduce) return;
  if (s.zero_stage == 0)
    throw FieldError(
        "{reduce_dtype} fp32 is FSDP's reduce_dtype, the gradients cast for ZeRO's reduce-scatter: it needs "
        "{zero} 1, 2 or 3 (got 0: DDP all-reduces the gradients in the precision backward made them)",
        "{reduce_dtype} fp32 是 FSDP 的 reduce_dtype，即为 ZeRO 的 reduce-scatter 转换梯度：需要 {zero} 1、2 或 3"
        "（实为 0：DDP 以反向计算得到的精度 all-reduce 梯度）");
  if (s.expert_parallel > 1)
    throw FieldError("{reduce_dtype} fp32 is not modelled with {expert_parallel} above 1 (the experts' gradients)",
                     "{reduce_dtype} fp32 尚未对 {expert_parallel} 大于 1（专家的梯度）建模");
}
}  // namespace

void validate_estimate_settings(const EstimateSettings& s) {
  require_axis(s.layout, Axis::dp);
  require_axis(s.layout, Axis::pp);
  require_axis(s.layout, Axis::tp);
  require_axis(s.layout, Axis::cp);
  if (s.seq % s.layout.cp() != 0)
    throw FieldError("{cp} " + std::to_string(s.layout.cp()) + ": {seq} " + std::to_string(s.seq) +
                         " does not split into equal slices (each context-parallel rank holds seq / cp tokens)",
                     "{cp} " + std::to_string(s.layout.cp()) + "：{seq} " + std::to_string(s.seq) +
                         " 无法均分（每个上下文并行 rank 持有 seq / cp 个 token）");
  check_expert_parallel(s);
  check_zero_stage_range(s.zero_stage);  // config/run_config.h, as the rules below
  require_in(s.micro_batch_size >= 1, "micro_batch", "at least 1", s.micro_batch_size);
  require_in(s.seq >= 0, "seq", "at least 1", s.seq);
  require_in(s.accum >= 1, "accum", "at least 1", s.accum);
  require_in(s.micro_batches >= 1, "micro_batches", "at least 1", s.micro_batches);
  require_in(s.gpus_per_node >= 1, "gpus_per_node", "at least 1", s.gpus_per_node);
  if (!(std::isfinite(s.efficiency) && s.efficiency > 0.0 && s.efficiency <= 1.0))
    throw FieldError("{efficiency} must be in (0, 1]", "{efficiency} 必须在 (0, 1] 内");
  if (s.sequence_parallel && s.layout.tp() == 1)
    throw FieldError(
        "{sequence_parallel} splits the sequence over the tensor-parallel ranks: it needs {tp} above 1 "
        "(got 1)",
        "{sequence_parallel} 把序列切分到张量并行 rank 上：需要 {tp} 大于 1（实际为 1）");
  if (s.layout.tp() > 1 && s.dp_mode == DataParallelMode::naive)  // as a run refuses it (validate_tensor_parallel)
    throw FieldError(
        "{tp} " + std::to_string(s.layout.tp()) +
            " with {dp_mode} naive is refused: tensor parallelism runs with DDP (Megatron-LM has no "
            "DataParallel replicas)",
        "{tp} " + std::to_string(s.layout.tp()) +
            " 不能与 {dp_mode} naive 一起用：张量并行与 DDP 一起运行（Megatron-LM 没有 DataParallel 副本）");
  check_layout_rules(s.layout.pp(), s.zero_stage, s.dp_mode);  // the same rules as a run's (config/run_config.h)
  check_offload_rules(s.zero_stage, s.layout.dp(), s.offload_params, s.offload_optimizer);
  // ZB-V: the run's rules (run_config.cpp, validate_zb_v); the layers' split into
  // 2p chunks is checked with the model (estimate/stage_placement.h).
  if (s.schedule == PipelineScheduleKind::zb_v) check_zb_v(s);
  // The zero-bubble schedules (estimate/split_backward_schedules.h) count what B
  // keeps for W for one tensor-parallel rank's slices, with or without
  // checkpointing, as trained.
  // Interleaved 1F1B: the run's rules (run_config.cpp, validate_interleaved); the
  // layers' split into p·v chunks is checked with the model (ModelShape::stage_layers).
  const bool interleaved = s.schedule == PipelineScheduleKind::interleaved_1f1b;
  const std::string v = std::to_string(s.virtual_stages);
  if (!interleaved && s.virtual_stages != 1)
    throw FieldError("{virtual_stages} " + v + " needs {schedule} interleaved-1f1b",
                     "{virtual_stages} " + v + " 需要 {schedule} interleaved-1f1b");
  if (interleaved && (s.virtual_stages < 2 || s.layout.pp() < 2 || s.micro_batches % s.layout.pp() != 0))
    throw FieldError("{schedule} interleaved-1f1b needs {virtual_stages} 2 or more (got " + v +
                         "), {pp} 2 or more and {micro_batches} a multiple of {pp} (got " +
                         std::to_string(s.micro_batches) + " and " + std::to_string(s.layout.pp()) + ")",
                     "{schedule} interleaved-1f1b 需要 {virtual_stages} 至少为 2（实为 " + v +
                         "）、{pp} 至少为 2，且 {micro_batches} 是 {pp} 的倍数（实为 " +
                         std::to_string(s.micro_batches) + " 与 " + std::to_string(s.layout.pp()) + "）");
  check_overlap_rules(s);
  if (s.selective_every_second_matmul && s.recompute != Recompute::selective)
    throw FieldError("{selective_ac} op is a policy of {checkpoint} selective (got {checkpoint} " +
                         std::string(recompute_name(s.recompute)) + ")",
                     "{selective_ac} op 是 {checkpoint} selective 的策略（实为 {checkpoint} " +
                         std::string(recompute_name(s.recompute)) + "）");
  check_float8(s);
  check_reduce_dtype(s);
}

std::string estimate_field_name(std::string_view key, const std::vector<SettingsPatch>& patches) {
  std::string name;
  for (const SettingsPatch& patch : patches)  // the last source that set it
    for (const auto& [setting, where] : patch.origin)
      if (setting == key) name = where;
  return name.empty() ? flag_of(key) : name;
}

namespace {
// What one patch sets, over `s` (the global batch is resolve_settings' to derive from).
void apply_patch(EstimateSettings& s, const SettingsPatch& p) {
  for (const Axis axis : kAxes)
    if (p.axes[axis]) s.layout[axis] = *p.axes[axis];
  if (p.zero_stage) s.zero_stage = *p.zero_stage;
  if (p.micro_batch_size) s.micro_batch_size = *p.micro_batch_size;
  if (p.accum) s.accum = *p.accum;
  if (p.micro_batches) s.micro_batches = *p.micro_batches;
  if (p.seq) s.seq = *p.seq;
  if (p.gpus_per_node) s.gpus_per_node = *p.gpus_per_node;
  if (p.dp_mode) s.dp_mode = *p.dp_mode;
  if (p.precision) s.precision = *p.precision;
  if (p.recompute) s.recompute = *p.recompute;
  if (p.schedule) s.schedule = *p.schedule;
  if (p.virtual_stages) s.virtual_stages = *p.virtual_stages;
  if (p.expert_parallel) s.expert_parallel = *p.expert_parallel;
  if (p.offload_optimizer) s.offload_optimizer = *p.offload_optimizer;
  if (p.offload_params) s.offload_params = *p.offload_params;
  if (p.sequence_parallel) s.sequence_parallel = *p.sequence_parallel;
  if (p.activations) s.activations = *p.activations;
  if (p.cuda) s.cuda = *p.cuda;
  if (p.flash_attention) s.flash_attention = *p.flash_attention;
  if (p.triton_attention) s.triton_attention = *p.triton_attention;
  if (p.fp32_reduce) s.fp32_reduce = *p.fp32_reduce;
  if (p.efficiency) s.efficiency = *p.efficiency;
  // --efficiency X is the flat model's one assumption: given alone, it asks for that model.
  if (p.efficiency && !p.measured_kernels) s.measured_kernels = false;
  if (p.measured_kernels) s.measured_kernels = *p.measured_kernels;
  if (p.eager_runtime) s.eager_runtime = *p.eager_runtime;
  if (p.selective_every_second_matmul) s.selective_every_second_matmul = *p.selective_every_second_matmul;
  if (p.dropout) s.dropout = *p.dropout;
  if (p.autocast) s.autocast = *p.autocast;
  if (p.memory_gbps) s.memory_gbps = *p.memory_gbps;
  if (p.network_gbps) s.network_gbps = *p.network_gbps;
  if (p.tp_comm_overlap) s.tp_comm_overlap = *p.tp_comm_overlap;
  if (p.async_tp) s.async_tp = *p.async_tp;
  if (p.overlap_param_gather) s.overlap_param_gather = *p.overlap_param_gather;
  if (p.float8_linears) s.float8_linears = *p.float8_linears;
  if (p.float8_all_gather) s.float8_all_gather = *p.float8_all_gather;
}
}  // namespace

bool patch_value(SettingsPatch& p, std::string_view k, const nlohmann::json& v) {
  for (const Axis axis : kAxes)  // every axis by its row's key (layout/parallel_axes.h)
    if (k == axis_name(axis)) {
      p.axes[axis] = v.get<int>();
      return true;
    }
  if (k == "zero")
    p.zero_stage = v.get<int>();
  else if (k == "micro_batch")
    p.micro_batch_size = v.get<int>();
  else if (k == "seq")
    p.seq = v.get<int>();
  else if (k == "accum")
    p.accum = v.get<int>();
  else if (k == "micro_batches")
    p.micro_batches = v.get<int>();
  else if (k == "gpus_per_node")
    p.gpus_per_node = v.get<int>();
  else if (k == "virtual_stages")
    p.virtual_stages = v.get<int>();
  else if (k == "ep")
    p.expert_parallel = v.get<int>();
  else if (k == "batch")
    p.global_batch = v.get<std::int64_t>();
  else if (k == "dp_mode")
    p.dp_mode = v.get<std::string>() == "naive" ? DataParallelMode::naive : DataParallelMode::ddp;
  else if (k == "precision")
    p.precision = parse_precision(v.get<std::string>(), k);
  else if (k == "checkpoint")
    p.recompute = parse_recompute(v.get<std::string>(), k);
  else if (k == "schedule")
    p.schedule = parse_pipeline_schedule_kind(v.get<std::string>());
  else if (k == "activations")
    p.activations = parse_activation_mode(v.get<std::string>(), k);
  else if (k == "device")
    p.cuda = v.get<std::string>() == "cuda";
  else if (k == "offload_optimizer")
    p.offload_optimizer = v.get<bool>();
  else if (k == "offload_params")
    p.offload_params = v.get<bool>();
  else if (k == "sequence_parallel")
    p.sequence_parallel = v.get<bool>();
  else if (k == "efficiency")
    p.efficiency = v.get<double>();
  else if (k == "attention") {
    p.flash_attention = v.get<std::string>() != "materialized";
    p.triton_attention = v.get<std::string>() == "triton";
  } else if (k == "reduce_dtype")
    p.fp32_reduce = v.get<std::string>() == "fp32";
  else if (k == "time_model")
    p.measured_kernels = v.get<std::string>() == "kernels";
  else if (k == "runtime")
    p.eager_runtime = v.get<std::string>() == "eager";
  else if (k == "selective_ac")
    p.selective_every_second_matmul = v.get<std::string>() == "op";
  else if (k == "dropout")
    p.dropout = v.get<double>();
  else if (k == "autocast")
    p.autocast = v.get<bool>();
  else if (k == "gpu_bandwidth")
    p.memory_gbps = v.get<double>();
  else if (k == "network_bandwidth")
    p.network_gbps = v.get<double>();
  else if (k == "tp_comm_overlap")
    p.tp_comm_overlap = v.get<bool>();
  else if (k == "async_tp")
    p.async_tp = v.get<bool>();
  else if (k == "overlap_param_gather")
    p.overlap_param_gather = v.get<bool>();
  else if (k == "float8")
    p.float8_linears = v.get<std::string>() == "tensorwise";
  else if (k == "float8_all_gather")
    p.float8_all_gather = v.get<bool>();
  else
    return false;
  return true;
}

SettingsPatch patch_from_values(const std::vector<SchemaValue>& values) {
  SettingsPatch p;
  for (const SchemaValue& v : values) {
    if (!patch_value(p, v.key, v.value))
      throw std::logic_error("estimate: a value of \"" + v.key + "\", which is not one of the estimator's settings");
    p.origin.push_back({v.key == "checkpoint" ? "recompute" : v.key == "batch" ? "global_batch" : v.key, v.from});
  }
  return p;
}

EstimateSettings resolve_settings(EstimateSettings s, const std::vector<SettingsPatch>& patches,
                                  std::vector<std::string>* notes) {
  std::optional<std::int64_t> global;
  std::string global_origin;
  std::size_t global_index = 0;
  bool micro_set = false, accum_set = false;
  std::size_t shape_set_after = 0;  // 1 + index of the last patch that set micro_batch, accum or dp
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const SettingsPatch& p = patches[i];
    apply_patch(s, p);
    if (p.micro_batch_size) micro_set = true;
    if (p.accum) accum_set = true;
    if (p.micro_batch_size || p.accum || p.axes[Axis::dp] || p.micro_batches) shape_set_after = i + 1;
    if (p.global_batch) {
      global = *p.global_batch;
      global_index = i;
      global_origin = "train_batch_size";
      for (const auto& [setting, where] : p.origin)
        if (setting == "global_batch") global_origin = where;
    }
  }
  if (global)
    apply_global_batch(s, *global, global_origin, micro_set, accum_set, shape_set_after > global_index + 1, notes);
  try {
    validate_estimate_settings(s);
  } catch (const FieldError& e) {  // named as the file or flag that set each field
    throw ConfigError(e.text([&](std::string_view key) { return estimate_field_name(key, patches); }));
  }
  return s;
}

EstimateSettings settings_for_run(const RunConfig& c) {
  SettingsPatch p;
  for (const RunField& row : run_fields())
    if (row.on(surface::estimate)) patch_value(p, row.key, row.get(c));
  p.micro_batch_size = c.micro_batch_size();  // the run's batch split over dp, accumulation and micro-batches
  EstimateSettings s;
  apply_patch(s, p);  // as the run has it: a config the panel has not validated yet still gets its bars
  return s;
}

}  // namespace shardscope
