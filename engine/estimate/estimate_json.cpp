// SPDX-License-Identifier: GPL-3.0-or-later
// estimate_to_json: the `shardscope-cli estimate --json` document. Keys are
// only ever added, never renamed (README.md documents each).
#include "estimate/estimate.h"

namespace shardscope {

namespace {
using nlohmann::json;

json categories(const MemoryBytes& bytes) {
  json out = json::object();
  for (MemoryCategory c : kAllMemoryCategories) out[std::string(memory_category_name(c))] = bytes[c];
  return out;
}

json formulas(const RankMemory& rank) {
  json out = json::object();
  for (MemoryCategory c : kAllMemoryCategories) out[std::string(memory_category_name(c))] = rank.formula(c);
  return out;
}

json model_json(const ModelShape& m) {
  return {{"name", m.name},
          {"preset", m.preset.empty() ? json(nullptr) : json(m.preset)},
          {"architecture", m.architecture},
          {"parameters", m.parameters()},
          {"base_model_parameters", m.base_model_parameters},
          {"vocab", m.vocab},
          {"max_positions", m.max_positions},
          {"hidden", m.hidden},
          {"layers", m.layers},
          {"heads", m.heads},
          {"intermediate", m.intermediate},
          {"largest_module_parameters", m.largest_module_parameters}};
}

json settings_json(const EstimateSettings& s) {
  json out = {{"dp", s.layout.dp()},
              {"pp", s.layout.pp()},
              {"zero_stage", s.zero_stage},
              {"dp_mode", std::string(data_parallel_mode_name(s.dp_mode))},
              {"precision", std::string(precision_name(s.precision))},
              {"micro_batch", s.micro_batch_size},
              {"seq", s.seq},
              {"accum", s.accum},
              {"micro_batches", s.micro_batches},
              {"global_batch", s.global_batch()},
              {"checkpoint", std::string(recompute_name(s.recompute))},
              {"schedule", pipeline_schedule_name(s.schedule)},
              {"offload_optimizer", s.offload_optimizer},
              {"offload_params", s.offload_params},
              {"activations", std::string(activation_mode_name(s.activations))},
              {"device", s.cuda ? "cuda" : "cpu"},
              {"gpus_per_node", s.gpus_per_node},
              {"efficiency", s.measured_kernels ? json("kernels") : json(s.efficiency)}};
  if (s.layout.tp() > 1 || s.sequence_parallel) {  // only then: documents of layouts without tp stay as they were
    out["tp"] = s.layout.tp();
    out["sequence_parallel"] = s.sequence_parallel;
  }
  if (s.layout.cp() > 1) out["cp"] = s.layout.cp();  // the same: only when there
  if (s.virtual_stages > 1) out["virtual_stages"] = s.virtual_stages;  // interleaved 1F1B only, likewise
  if (s.eager_runtime) out["runtime"] = "eager";  // the kernel model's run inputs, likewise only when given
  if (s.selective_every_second_matmul) out["selective_ac"] = "op";
  if (s.dropout > 0) out["dropout"] = s.dropout;
  if (s.autocast) out["autocast"] = true;
  if (s.tp_comm_overlap) out["tp_comm_overlap"] = true;
  if (s.async_tp) out["async_tp"] = true;
  if (s.overlap_param_gather) out["overlap_param_gather"] = true;
  if (s.memory_gbps > 0) out["gpu_bandwidth"] = s.memory_gbps;
  if (s.network_gbps > 0) out["network_bandwidth"] = s.network_gbps;
  if (s.float8_linears) out["float8"] = "tensorwise";
  if (s.float8_all_gather) out["float8_all_gather"] = true;
  if (s.triton_attention) out["attention"] = "triton";  // flash is not written: documents stay as they were
  if (s.fp32_reduce) out["reduce_dtype"] = "fp32";
  return out;
}

// The tensor-, expert- and context-parallel terms, each only where its layout has it (documents of
// layouts without it stay as they were); their seconds where a GPU was given.
void add_parallel_json(json& out, const TimeEstimate& t) {
  const bool tp = !t.tp_formula.empty(), ep = !t.ep_formula.empty(), cp = !t.cp_formula.empty();
  if (tp) {
    out["tp_bytes_per_rank"] = t.tp_bytes;
    out["tp_formula"] = t.tp_formula;
  }
  if (ep) {
    out["ep_bytes_per_rank"] = t.ep_bytes;
    out["ep_formula"] = t.ep_formula;
  }
  if (cp) {
    out["cp_bytes_per_rank"] = t.cp_bytes;
    out["cp_formula"] = t.cp_formula;
  }
  if (!t.has_gpu) return;
  if (ep) {
    out["ep_comm_s"] = t.ep_comm_s;
    out["ep_link"] = t.ep_link;
  }
  if (cp) {
    out["cp_comm_s"] = t.cp_comm_s;
    out["cp_exposed_s"] = t.cp_exposed_s;
    out["cp_link"] = t.cp_link;
  }
  if (tp) {
    out["tp_comm_s"] = t.tp_comm_s;
    out["tp_link"] = t.tp_link;
    if (t.tp_exposed_s != t.tp_comm_s) out["tp_exposed_s"] = t.tp_exposed_s;  // --tp-comm-overlap or --async-tp
  }
}

json time_json(const TimeEstimate& t) {
  json out = {{"model_only", true},
              {"note", t.note},
              {"tokens_per_step", t.tokens_per_step},
              {"matmul_parameters", t.matmul_parameters},
              {"flops_per_token", t.flops_per_token},
              {"flops_per_step", t.flops_per_step},
              {"flops_formula", t.flops_formula},
              {"dp_bytes_per_rank", t.dp_bytes},
              {"dp_formula", t.dp_formula},
              {"pp_bytes_per_stage", t.pp_bytes},
              {"pp_formula", t.pp_formula},
              {"bubble_fraction", t.bubble_fraction},
              {"bubble_formula", t.bubble_formula}};
  add_parallel_json(out, t);
  if (!t.has_gpu) return out;
  if (t.overlap_contention_s > 0) out["overlap_contention_s"] = t.overlap_contention_s;
  out["gpu"] = t.gpu;
  out["peak_tflops"] = t.peak_tflops;
  out["efficiency"] = t.efficiency;
  out["compute_s"] = t.compute_s;
  if (t.measured_kernels) {  // the kernel model's parts and constants (clock/kernel_model.h)
    out["gemm_s"] = t.gemm_s;
    out["attention_s"] = t.attention_s;
    out["memory_bound_s"] = t.memory_bound_s;
    if (t.ring_passes_s > 0) out["ring_passes_s"] = t.ring_passes_s;  // of memory_bound_s, --cp
    out["gemm_kernels"] = t.gemm_kernels;
    out["sustained_clock"] = t.sustained_clock;
    out["dp_exposed_s"] = t.dp_exposed_s;
    out["kernel_model"] = {{"source", "XLA's H100 GEMM table (matmul_interpolator_data.h)"},
                           {"gemm_fraction", t.gemm_fraction},  // at 4096³; each GEMM takes its shape's
                           {"gemm_fraction_at", "4096x4096x4096; each GEMM at the table's fraction for its shape"},
                           {"memory_fraction", t.memory_fraction},
                           {"gemm_floor_s", t.gemm_floor_s},
                           {"attention_fraction", t.attention_fraction},
                           {"memory_gbps", t.memory_gbps}};
    if (t.float8_peak_tflops > 0)  // --float8 only
      out["float8"] = {{"source", "DeepGEMM's H800 FP8 GEMM table (README at a6d97a1)"},
                       {"peak_tflops", t.float8_peak_tflops},
                       {"gemm_fraction", t.float8_gemm_fraction},
                       {"cast_s", t.float8_cast_s}};
  }
  out["bubble_s"] = t.bubble_s;
  out["optimizer_s"] = t.optimizer_s;
  out["dp_comm_s"] = t.dp_comm_s;
  out["pp_comm_s"] = t.pp_comm_s;
  out["dp_link"] = t.dp_link;
  out["pp_link"] = t.pp_link;
  out["step_time_s"] = t.step_s;
  out["step_time_overlapped_s"] = t.step_overlapped_s;
  out["tokens_per_s"] = t.tokens_per_s;
  out["tokens_per_s_per_gpu"] = t.tokens_per_s_per_gpu;
  out["model_flops_per_token"] = t.model_flops_per_token;
  out["tflops_per_gpu"] = t.tflops_per_gpu;
  out["mfu"] = t.mfu;
  return out;
}

json deepspeed_json(const DeepSpeedModelStates& d) {
  return {{"stage", d.stage},
          {"cpu_offload", d.cpu_offload},
          {"cpu_offload_params", d.cpu_offload_params},
          {"zero_init", d.zero_init},
          {"gpu_bytes", d.gpu_bytes},
          {"gpu_formula", d.gpu_formula},
          {"cpu_bytes_before_factor", d.cpu_bytes_before_factor},
          {"buffer_factor", d.buffer_factor},
          {"cpu_bytes", d.cpu_bytes},
          {"cpu_formula", d.cpu_formula},
          {"largest_layer_memory", d.largest_layer_memory}};
}
}  // namespace

json estimate_to_json(const Estimate& e) {
  json ranks = json::array();
  for (const RankMemory& r : e.memory.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"dp_rank", r.dp_rank},
                     {"stage", r.stage},
                     {"layers", {r.layers.first_layer, r.layers.end_layer}},
                     {"embedding", r.layers.embedding},
                     {"head", r.layers.head},
                     {"stage_parameters", r.stage_parameters},
                     {"micro_batches_in_flight", r.micro_batches_in_flight},
                     {"bytes", categories(r.bytes)},
                     {"formulas", formulas(r)},
                     {"model_states_bytes", r.model_states()},
                     {"total_bytes", r.total()},
                     {"host_bytes", r.host_bytes},
                     {"host_formula", r.host_formula}});
  }
  json levers = json::array();
  for (const FitLever& l : e.fit.levers)
    levers.push_back({{"change", l.change}, {"flags", l.flags}, {"saves_bytes", l.saves_bytes}, {"fits", l.fits}});
  json out = {{"schema", "shardscope-estimate/1"},
              {"units", "bytes (GB in text = 10^9 bytes)"},
              {"model", model_json(e.model)},
              {"settings", settings_json(e.settings)},
              {"engine_exact", e.memory.engine_exact},
              {"basis", e.memory.basis},
              {"ranks", ranks},
              {"total_bytes", e.memory.fullest_total()},
              {"fullest_rank", e.memory.fullest_rank()},
              {"cluster_total_bytes", e.memory.cluster_total()},
              {"fits", e.fit.has_capacity ? json(e.fit.fits) : json(nullptr)},
              {"capacity_bytes", e.fit.has_capacity ? json(e.fit.capacity_bytes) : json(nullptr)},
              {"margin_bytes", e.fit.has_capacity ? json(e.fit.margin_bytes) : json(nullptr)},
              {"capacity_source", e.fit.capacity_source},
              {"summary", e.fit.summary},
              {"levers", levers},
              {"time", time_json(e.time)},
              {"deepspeed_estimator", e.deepspeed ? deepspeed_json(*e.deepspeed) : json(nullptr)},
              {"warnings", e.warnings}};
  if (e.gpu)
    out["gpu"] = {{"name", e.gpu->name},
                  {"description", e.gpu->description},
                  {"memory_bytes", e.gpu->memory_bytes},
                  {"peak_tflops", e.gpu->peak_tflops(e.settings.precision)},
                  {"memory_gbps", e.gpu->memory_gbps},
                  {"link_gbps", e.gpu->link_gbps},
                  {"link", e.gpu->link}};
  else
    out["gpu"] = nullptr;
  return out;
}

}  // namespace shardscope
