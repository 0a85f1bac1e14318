// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli estimate: flags and config files -> EstimateRequest ->
// a per-rank table (or --json). Settings apply in order: accelerate YAML, the
// DeepSpeed JSON it names, --deepspeed, then the flags given on the command line.
#include "cli_estimate.h"

#include <cstdio>

#include "cli_args.h"
#include "core/error.h"
#include "estimate/config_import.h"
#include "estimate/estimate.h"
#include "estimate/formula_text.h"

namespace shardscope::cli {
namespace {

struct Flags {
  std::string model = "gpt-tiny", deepspeed, accelerate, dp, pp, zero, dp_mode, precision, micro_batch, seq, accum,
              micro_batches, checkpoint, schedule, activations, gpu, gpu_mem, gpus_per_node, device;
  float efficiency = 0.5f;
  bool offload_optimizer = false, offload_params = false, deepspeed_conventions = false, json = false;
};

// Where a setting given in the config files came from, as (setting, file) pairs.
using SettingOrigins = std::vector<std::pair<std::string, std::string>>;

// Flags given on the command line, as the last settings patch.
SettingsPatch patch_from_flags(const Flags& f) {
  SettingsPatch p;
  auto number = [&](const std::string& text, const char* flag, const char* setting, std::int64_t max,
                    std::optional<int>& out) {
    if (text.empty()) return;
    out = static_cast<int>(parse_int(flag, text, 1, max));
    p.origin.push_back({setting, flag});
  };
  number(f.dp, "--dp", "dp", 1'000'000, p.axes[Axis::dp]);
  number(f.pp, "--pp", "pp", 10'000, p.axes[Axis::pp]);
  number(f.micro_batch, "--micro-batch", "micro_batch", 1 << 24, p.micro_batch_size);
  number(f.seq, "--seq", "seq", 1 << 24, p.seq);
  number(f.accum, "--accum", "accum", 1 << 24, p.accum);
  number(f.micro_batches, "--micro-batches", "micro_batches", 1 << 20, p.micro_batches);
  number(f.gpus_per_node, "--gpus-per-node", "gpus_per_node", 1 << 16, p.gpus_per_node);
  if (!f.zero.empty()) {
    p.zero_stage = static_cast<int>(parse_int("--zero", f.zero, 0, 3));
    p.origin.push_back({"zero", "--zero"});
  }
  if (!f.dp_mode.empty()) {
    if (f.dp_mode != "naive" && f.dp_mode != "ddp")
      throw UsageError("--dp-mode: '" + f.dp_mode + "' is not one of naive, ddp");
    p.dp_mode = f.dp_mode == "naive" ? DataParallelMode::naive : DataParallelMode::ddp;
    p.origin.push_back({"dp_mode", "--dp-mode"});
  }
  if (!f.precision.empty()) p.precision = parse_precision(f.precision, "--precision");
  if (!f.checkpoint.empty()) p.recompute = parse_recompute(f.checkpoint, "--checkpoint");
  if (!f.schedule.empty()) p.schedule = parse_pipeline_schedule_kind(f.schedule);
  if (!f.activations.empty()) p.activations = parse_activation_mode(f.activations, "--activations");
  if (!f.device.empty()) {
    if (f.device != "cpu" && f.device != "cuda")
      throw UsageError("--device: '" + f.device + "' is not one of cpu, cuda");
    p.cuda = f.device == "cuda";
  }
  if (f.offload_optimizer) p.offload_optimizer = true, p.origin.push_back({"offload_optimizer", "--offload-optimizer"});
  if (f.offload_params) p.offload_params = true, p.origin.push_back({"offload_params", "--offload-params"});
  p.efficiency = f.efficiency;
  return p;
}

std::string stage_text(const RankMemory& r) {
  std::string text = "stage " + std::to_string(r.stage) + ", layers " + std::to_string(r.layers.first_layer) + "-" +
                     std::to_string(r.layers.end_layer - 1);
  if (r.layers.embedding) text += " + embeddings";
  if (r.layers.head) text += " + head";
  return text;
}

bool same_numbers(const RankMemory& a, const RankMemory& b) {
  return a.stage == b.stage && a.bytes.bytes == b.bytes.bytes && a.formulas == b.formulas &&
         a.host_bytes == b.host_bytes;
}

void print_ranks(const MemoryEstimate& memory) {
  const auto& ranks = memory.ranks;
  for (std::size_t first = 0; first < ranks.size();) {
    std::size_t last = first;
    while (last + 1 < ranks.size() && same_numbers(ranks[last + 1], ranks[first])) ++last;
    const RankMemory& r = ranks[first];
    std::printf("\n%s (%s):\n",
                first == last ? ("rank " + std::to_string(first)).c_str()
                              : ("ranks " + std::to_string(first) + "-" + std::to_string(last)).c_str(),
                stage_text(r).c_str());
    for (MemoryCategory c : kAllMemoryCategories)
      std::printf("  %-17s %17s %9s  %s\n", std::string(memory_category_name(c)).c_str(), grouped(r.bytes[c]).c_str(),
                  decimal_bytes(static_cast<double>(r.bytes[c])).c_str(), r.formula(c).c_str());
    std::printf("  %-17s %17s %9s\n", "total", grouped(r.total()).c_str(),
                decimal_bytes(static_cast<double>(r.total())).c_str());
    if (r.host_bytes > 0)
      std::printf("  %-17s %17s %9s  %s\n", "host (offloaded)", grouped(r.host_bytes).c_str(),
                  decimal_bytes(static_cast<double>(r.host_bytes)).c_str(), r.host_formula.c_str());
    first = last + 1;
  }
}

void print_time(const Estimate& e) {
  const TimeEstimate& t = e.time;
  std::printf("\nTime per optimizer step (%s):\n", t.note.c_str());
  std::printf("  FLOPs          %s per step = %s FLOPs/token × %s tokens: %s\n", short_number(t.flops_per_step).c_str(),
              short_number(t.flops_per_token).c_str(), grouped(t.tokens_per_step).c_str(), t.flops_formula.c_str());
  std::printf("  data-parallel  %s sent per rank: %s\n", decimal_bytes(t.dp_bytes).c_str(), t.dp_formula.c_str());
  std::printf("  pipeline p2p   %s sent per stage: %s\n", decimal_bytes(t.pp_bytes).c_str(), t.pp_formula.c_str());
  std::printf("  bubble         %.1f%%: %s\n", 100.0 * t.bubble_fraction, t.bubble_formula.c_str());
  if (!t.has_gpu) {
    std::printf("  (give --gpu for modeled seconds)\n");
    return;
  }
  std::printf(
      "  on %s at %.0f%% of %s TFLOP/s (%s): compute %.3f s + bubble %.3f s + optimizer %.3f s + "
      "data-parallel %.3f s (%s) + pipeline %.3f s = %.3f s per step, %s tokens/s; %.3f s if the "
      "data-parallel communication overlaps backward\n",
      t.gpu.c_str(), 100.0 * t.efficiency, short_number(t.peak_tflops, 4).c_str(),
      std::string(precision_name(e.settings.precision)).c_str(), t.compute_s, t.bubble_s, t.optimizer_s, t.dp_comm_s,
      t.dp_link.c_str(), t.pp_comm_s, t.step_s, grouped(static_cast<std::int64_t>(t.tokens_per_s)).c_str(),
      t.step_overlapped_s);
  std::printf(
      "  throughput     %s tokens/s per GPU, %.1f TFLOP/s per GPU run (recompute included), MFU %.1f%% "
      "(6N + 12·L·h·s per token over %s TFLOP/s peak); assumes %.0f%% of peak on every matmul, no memory-bound "
      "work but AdamW's, no kernel launches, nothing overlapped\n",
      grouped(static_cast<std::int64_t>(t.tokens_per_s_per_gpu)).c_str(), t.tflops_per_gpu, 100.0 * t.mfu,
      short_number(t.peak_tflops, 4).c_str(), 100.0 * t.efficiency);
}

void print_estimate(const Estimate& e, const SettingOrigins& origins) {
  const ModelShape& m = e.model;
  const EstimateSettings& s = e.settings;
  std::printf("Estimate for %s: %s parameters (%s: L=%lld, h=%lld, a=%lld, vocab=%lld)\n", m.name.c_str(),
              grouped(m.parameters()).c_str(), m.architecture.c_str(), static_cast<long long>(m.layers),
              static_cast<long long>(m.hidden), static_cast<long long>(m.heads), static_cast<long long>(m.vocab));
  if (m.base_model_parameters != m.parameters())
    std::printf("  (Hugging Face AutoModel, without the LM head: %s parameters)\n",
                grouped(m.base_model_parameters).c_str());
  std::printf(
      "Layout: dp %d × pp %d = %d GPUs, %s, ZeRO-%d, %s, micro-batch %d × seq %d, accum %d × %d pipeline "
      "micro-batches (%s) per step, global batch %lld, checkpoint %s, activations %s (%s kernels)%s%s\n",
      s.layout.dp(), s.layout.pp(), s.world_size(), s.dp_mode == DataParallelMode::naive ? "naive DataParallel" : "DDP",
      s.zero_stage, std::string(precision_name(s.precision)).c_str(), s.micro_batch_size, s.seq, s.accum,
      s.micro_batches, pipeline_schedule_name(s.schedule), static_cast<long long>(s.global_batch()),
      std::string(recompute_name(s.recompute)).c_str(), std::string(activation_mode_name(s.activations)).c_str(),
      s.cuda ? "cuda" : "cpu", s.offload_optimizer ? ", optimizer offload" : "",
      s.offload_params ? ", parameter offload" : "");
  for (const auto& [setting, where] : origins) std::printf("  %s from %s\n", setting.c_str(), where.c_str());
  std::printf("Basis: %s\n", e.memory.basis.c_str());
  std::printf("Sizes in bytes; GB = 10^9 bytes. Ψ = parameters, Nd = data-parallel ranks.\n");
  print_ranks(e.memory);
  std::printf("\nFullest rank: %d, %s. All ranks together: %s.\n", e.memory.fullest_rank(),
              decimal_bytes(static_cast<double>(e.memory.fullest_total())).c_str(),
              decimal_bytes(static_cast<double>(e.memory.cluster_total())).c_str());
  if (e.fit.has_capacity)
    std::printf("Fit on %s, %s: %s\n", e.fit.capacity_source.c_str(),
                decimal_bytes(static_cast<double>(e.fit.capacity_bytes)).c_str(), e.fit.summary.c_str());
  else
    std::printf("%s\n", e.fit.summary.c_str());
  if (!e.fit.levers.empty()) {
    std::printf("Levers (each alone, fullest rank):");
    for (const FitLever& l : e.fit.levers)
      std::printf("\n  %-55s %-32s −%s%s", l.change.c_str(), l.flags.c_str(),
                  decimal_bytes(static_cast<double>(l.saves_bytes)).c_str(), l.fits ? " (then fits)" : "");
    std::printf("\n");
  }
  print_time(e);
  if (e.deepspeed) {
    const DeepSpeedModelStates& d = *e.deepspeed;
    std::printf("\nDeepSpeed's estimator (ZeRO-%d, model states only, its conventions):\n", d.stage);
    std::printf("  per GPU   %s = %s\n", decimal_bytes(static_cast<double>(d.gpu_bytes)).c_str(),
                d.gpu_formula.c_str());
    std::printf("  per node  %s CPU = %s\n", decimal_bytes(static_cast<double>(d.cpu_bytes)).c_str(),
                d.cpu_formula.c_str());
  }
  if (!e.warnings.empty()) {
    std::printf("\nWarnings:\n");
    for (const auto& w : e.warnings) std::printf("  - %s\n", w.c_str());
  }
}

// The flags of `estimate`, in the order --help lists them.
ArgParser estimate_parser(Flags& f) {
  std::string presets;
  for (const auto& p : model_presets()) presets += (presets.empty() ? "" : ", ") + p.name;
  std::string gpus;
  for (const auto& g : gpu_profiles()) gpus += (gpus.empty() ? "" : ", ") + g.name;
  ArgParser parser("shardscope-cli estimate",
                   "Predict the memory of every rank by ledger category (parameters, gradients, optimizer_states,\n"
                   "activations, communication, workspace), each number with its formula; check the fit on a GPU\n"
                   "and name the lever that saves most; model the time of a step. Settings come from the config\n"
                   "files first, then from the flags given. Sizes: GB = 10^9 bytes. Schema of --json: README.md.");
  parser.add_string("--model", "PRESET|config.json",
                    "Model preset (" + presets +
                        ") or a Hugging Face config.json "
                        "(gpt2, bert, llama, mistral)",
                    &f.model);
  parser.add_string("--deepspeed", "FILE",
                    "DeepSpeed JSON config (batch split, fp16/bf16, ZeRO stage, offload, "
                    "activation checkpointing)",
                    &f.deepspeed);
  parser.add_string("--accelerate", "FILE",
                    "accelerate YAML config (num_processes, num_machines, mixed_precision, "
                    "deepspeed_config, fsdp_config)",
                    &f.accelerate);
  parser.add_string("--dp", "N", "Data-parallel ranks, 1-1000000 (default 1); dp × pp at most 16384", &f.dp);
  parser.add_string("--pp", "N", "Pipeline stages, 1-10000 (default 1)", &f.pp);
  parser.add_string("--zero", "S", "ZeRO stage 0-3 (default 0)", &f.zero);
  parser.add_string("--dp-mode", "naive|ddp", "How ranks combine gradients (default ddp)", &f.dp_mode);
  parser.add_string("--precision", "fp32|fp16|bf16", "fp32, or mixed precision with fp16/bf16 (default fp32)",
                    &f.precision);
  parser.add_string("--micro-batch", "B", "Sequences per rank per micro-step, 1-16777216 (default 1)", &f.micro_batch);
  parser.add_string("--seq", "T", "Tokens per sequence, 1-16777216 (default: the model's maximum)", &f.seq);
  parser.add_string("--accum", "K", "Gradient accumulation steps per optimizer step, 1-16777216 (default 1)", &f.accum);
  parser.add_string("--micro-batches", "M", "Pipeline micro-batches per accumulation step, 1-1048576 (default 1)",
                    &f.micro_batches);
  parser.add_string("--checkpoint", "none|selective|full", "Activation recompute (default none)", &f.checkpoint);
  parser.add_string("--schedule", "gpipe|1f1b", "Pipeline schedule (default 1f1b)", &f.schedule);
  parser.add_switch("--offload-optimizer", "Optimizer states and step on the CPU (ZeRO-Offload)", &f.offload_optimizer);
  parser.add_switch("--offload-params", "ZeRO-3 parameters in CPU memory", &f.offload_params);
  parser.add_string("--activations", "shardscope|formula",
                    "Activation bytes of ShardScope's kernels (exact) or sbh(34 + 5as/h) per layer (default:\n"
                    "      shardscope when ShardScope implements the model, else formula)",
                    &f.activations);
  parser.add_string("--device", "cpu|cuda",
                    "Whose kernels ShardScope's activation bytes follow: cpu (default) or cuda, whose fp16/bf16\n"
                    "      attention is fused and keeps b·a·s rows instead of b·a·s² probabilities",
                    &f.device);
  parser.add_string("--gpu", "NAME", "GPU profile: " + gpus, &f.gpu);
  parser.add_string("--gpu-mem", "SIZE",
                    "GPU memory for the fit instead of the profile's (80GB, 80GiB, 24576MiB; positive, at most\n"
                    "      1000000 of its unit)",
                    &f.gpu_mem);
  parser.add_string("--gpus-per-node", "N",
                    "GPUs per machine, 1-65536 (default 8; accelerate: num_processes / num_machines)",
                    &f.gpus_per_node);
  parser.add_float("--efficiency", "Time model: the fraction of peak FLOP/s a step sustains (an assumption)",
                   &f.efficiency);
  parser.add_switch("--deepspeed-conventions",
                    "Also show DeepSpeed's own estimator (ZeRO-2/3 model states, 1.5 "
                    "buffer factor on CPU memory)",
                    &f.deepspeed_conventions);
  parser.add_switch("--json", "Print one JSON object instead of the table (schema in README.md)", &f.json);
  return parser;
}

// Settings apply in order: the config files, then the flags given; `origins` gets the config files' part.
EstimateRequest make_request(const Flags& f, SettingOrigins& origins) {
  EstimateRequest request;
  request.model = load_model_shape(f.model, &request.warnings);
  ImportedSettings imported = import_settings(f.accelerate, f.deepspeed);
  request.warnings.insert(request.warnings.end(), imported.warnings.begin(), imported.warnings.end());
  request.nodes = imported.nodes;
  for (const SettingsPatch& patch : imported.patches)
    origins.insert(origins.end(), patch.origin.begin(), patch.origin.end());
  EstimateSettings base;
  if (!request.model.engine_config) base.activations = ActivationMode::formula;
  imported.patches.push_back(patch_from_flags(f));
  request.settings = resolve_settings(base, imported.patches, &request.warnings);
  if (!f.gpu.empty()) request.gpu = find_gpu_profile(f.gpu);
  if (!f.gpu_mem.empty()) request.gpu_memory_bytes = parse_memory_size(f.gpu_mem);
  request.deepspeed_conventions = f.deepspeed_conventions;
  return request;
}

}  // namespace

int run_estimate(const std::vector<std::string>& args) {
  Flags f;
  ArgParser parser = estimate_parser(f);
  if (!parser.parse(args)) return 0;
  SettingOrigins origins;
  const Estimate estimate = compute_estimate(make_request(f, origins));
  if (f.json) {
    std::printf("%s\n", estimate_to_json(estimate).dump(2).c_str());
    return 0;
  }
  print_estimate(estimate, origins);
  return 0;
}

}  // namespace shardscope::cli
