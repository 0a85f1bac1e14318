// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli estimate: flags and config files -> EstimateRequest ->
// a per-rank table (or --json). Settings apply in order: accelerate YAML, the
// DeepSpeed JSON it names, --deepspeed, then the flags given on the command line.
// The settings' flags, help, ranges and choices are the run-config schema's
// rows on the estimate surface (config/run_schema.h); only the files and the
// output switches are this command's own.
#include "cli_estimate.h"

#include <cstdio>
#include <map>

#include "cli_args.h"
#include "clock/attention_kernel.h"
#include "clock/overlap_contention.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/config_import.h"
#include "estimate/estimate.h"
#include "estimate/formula_text.h"

namespace shardscope::cli {
namespace {

struct Flags {
  std::map<std::string, std::string, std::less<>> given;  // a schema row's key -> the text on the command line
  std::string deepspeed, accelerate;
  std::optional<float> efficiency;  // the flat time model's fraction of peak (0.5 unless given)
  bool deepspeed_conventions = false, json = false;

  // The text given for `key`; an empty one counts as not given.
  const std::string* text(std::string_view key) const {
    const auto it = given.find(key);
    return it == given.end() || it->second.empty() ? nullptr : &it->second;
  }
};

// A row of the schema as `estimate` reads it: its flag, range and choices there.
RunField estimate_row(std::string_view key) {
  const RunField* field = find_schema_field(key);
  if (field == nullptr || !field->on(surface::estimate))
    throw std::logic_error("estimate: no schema row \"" + std::string(key) + "\" on the estimate surface");
  return field_on(*field, surface::estimate);
}

// The value given for `key`, checked against its row's estimate range (a UsageError naming the flag).
std::optional<nlohmann::json> flag_value(const Flags& f, std::string_view key) {
  const std::string* text = f.text(key);
  if (text == nullptr) return std::nullopt;
  const RunField row = estimate_row(key);
  try {
    return field_value_from_text(row, *text);
  } catch (const FieldError& e) {
    throw UsageError(e.text([](std::string_view k) { return std::string(estimate_row(k).flag); }));
  }
}

// Where a setting given in the config files came from, as (setting, file) pairs.
using SettingOrigins = std::vector<std::pair<std::string, std::string>>;

// Flags given on the command line, as the last settings patch: each a schema value credited to
// its flag, read into the settings as a file's are (patch_from_values). Values are checked in
// this order (the first bad flag is the one reported).
SettingsPatch patch_from_flags(const Flags& f) {
  std::vector<SchemaValue> values;
  const auto given = [&](std::string_view key, std::optional<nlohmann::json> value) {
    if (value) values.push_back({std::string(key), std::move(*value), std::string(estimate_row(key).flag)});
  };
  for (const char* key : {"dp", "pp", "tp", "cp", "ep", "micro_batch", "seq", "accum", "micro_batches", "gpus_per_node",
                          "zero", "dp_mode"})
    given(key, flag_value(f, key));
  // The engine's own converters: --precision also takes accelerate's "no" (fp32), and both keep their messages.
  if (const std::string* text = f.text("precision"))
    given("precision", std::string(precision_name(parse_precision(*text, "--precision"))));
  given("checkpoint", flag_value(f, "checkpoint"));
  if (const std::string* text = f.text("schedule"))
    given("schedule", std::string(pipeline_schedule_name(parse_pipeline_schedule_kind(*text))));
  given("virtual_stages", flag_value(f, "virtual_stages"));  // interleaved 1F1B's chunks per stage
  for (const char* key : {"activations", "device", "offload_optimizer", "offload_params", "sequence_parallel"})
    given(key, flag_value(f, key));
  given("attention", flag_value(f, "attention"));
  given("time_model", flag_value(f, "time_model"));
  for (const char* key :
       {"runtime", "selective_ac", "dropout", "autocast", "tp_comm_overlap", "async_tp", "overlap_param_gather",
        "gpu_bandwidth", "network_bandwidth", "float8", "float8_all_gather", "reduce_dtype"})
    given(key, flag_value(f, key));
  if (f.efficiency) given("efficiency", static_cast<double>(*f.efficiency));
  return patch_from_values(values);
}

std::string stage_text(const RankMemory& r) {
  std::string text = "stage " + std::to_string(r.stage) + ", layers " + std::to_string(r.layers.first_layer) + "-" +
                     std::to_string(r.layers.end_layer - 1);
  for (int c = 1; c < r.layers.chunks; ++c)  // interleaved 1F1B: the stage's later chunks
    text +=
        ", " + std::to_string(r.layers.chunk(c).first_layer) + "-" + std::to_string(r.layers.chunk(c).end_layer - 1);
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
    for (MemoryCategory c : kAllMemoryCategories) {
      std::printf("  %-17s %17s %9s  %s\n", std::string(memory_category_name(c)).c_str(), grouped(r.bytes[c]).c_str(),
                  decimal_bytes(static_cast<double>(r.bytes[c])).c_str(), r.formula(c).c_str());
      if (c == MemoryCategory::optimizer_states)  // the subtotal ZeRO shards, before what a batch adds
        std::printf("  %-17s %17s %9s  %s\n", "= model states", grouped(r.model_states()).c_str(),
                    decimal_bytes(static_cast<double>(r.model_states())).c_str(),
                    "subtotal: parameters + gradients + optimizer_states");
    }
    std::printf("  %-17s %17s %9s\n", "total", grouped(r.total()).c_str(),
                decimal_bytes(static_cast<double>(r.total())).c_str());
    if (r.host_bytes > 0)
      std::printf("  %-17s %17s %9s  %s\n", "host (offloaded)", grouped(r.host_bytes).c_str(),
                  decimal_bytes(static_cast<double>(r.host_bytes)).c_str(), r.host_formula.c_str());
    first = last + 1;
  }
}

// The modeled seconds on a GPU profile: the flat assumption's line, or the kernel model's parts.
void print_gpu_time(const Estimate& e) {
  const TimeEstimate& t = e.time;
  char text[96];
  if ((e.settings.tp_comm_overlap || e.settings.async_tp) && t.measured_kernels)
    std::snprintf(text, sizeof text, "%.3f s exposed of %.3f", t.tp_exposed_s, t.tp_comm_s);
  else
    std::snprintf(text, sizeof text, "%.3f", t.tp_comm_s);
  const std::string tp_text =  // the tp all-reduces and ep all-to-alls, on the critical path (only with tp, ep > 1)
      (t.tp_formula.empty() ? "" : " + tensor-parallel " + std::string(text) + " s (" + t.tp_link + ")") +
      (t.ep_formula.empty() ? "" : " + all-to-all " + short_number(t.ep_comm_s, 3) + " s (" + t.ep_link + ")") +
      (t.cp_formula.empty()
           ? ""
           : " + context-parallel " + (t.measured_kernels ? short_number(t.cp_exposed_s, 3) + " s exposed of " : "") +
                 short_number(t.cp_comm_s, 3) + " s (" + t.cp_link + ")") +
      (t.overlap_contention_s > 0 ? " + overlap contention " + short_number(t.overlap_contention_s, 3) +
                                        " s (the kernels beside the collectives they hide, " +
                                        short_number(100 * kOverlapComputeSlowdown, 3) + "% slower)"
                                  : "");
  if (t.measured_kernels)
    std::snprintf(text, sizeof text, "%.3f s exposed of %.3f s", t.dp_exposed_s, t.dp_comm_s);
  else
    std::snprintf(text, sizeof text, "%.3f s", t.dp_comm_s);
  std::printf(
      "  on %s at %.0f%% of %s TFLOP/s (%s): compute %.3f s + bubble %.3f s + optimizer %.3f s + "
      "data-parallel %s (%s) + pipeline %.3f s%s = %.3f s per step, %s tokens/s",
      t.gpu.c_str(), 100.0 * t.efficiency, short_number(t.peak_tflops, 4).c_str(),
      std::string(precision_name(e.settings.precision)).c_str(), t.compute_s, t.bubble_s, t.optimizer_s, text,
      t.dp_link.c_str(), t.pp_comm_s, tp_text.c_str(), t.step_s,
      grouped(static_cast<std::int64_t>(t.tokens_per_s)).c_str());
  if (!t.measured_kernels)
    std::printf("; %.3f s if the data-parallel communication overlaps backward", t.step_overlapped_s);
  std::printf(
      "\n  throughput     %s tokens/s per GPU, %.1f TFLOP/s per GPU run (recompute included), MFU %.1f%% "
      "(6N + 12·L·h·s per token over %s TFLOP/s peak); ",
      grouped(static_cast<std::int64_t>(t.tokens_per_s_per_gpu)).c_str(), t.tflops_per_gpu, 100.0 * t.mfu,
      short_number(t.peak_tflops, 4).c_str());
  if (!t.measured_kernels) {
    std::printf(
        "assumes %.0f%% of peak on every matmul, no memory-bound work but AdamW's, no kernel launches, "
        "nothing overlapped\n",
        100.0 * t.efficiency);
    return;
  }
  std::printf(
      "data-parallel traffic overlapped as its strategy overlaps it%s, tensor-parallel%s and pipeline traffic on "
      "the critical path, %s, no host gaps between kernels\n",
      t.cp_formula.empty() ? "" : ", ring attention's beside its blocks",
      e.settings.tp_comm_overlap ? " (what the GEMMs do not hide)"
      : e.settings.async_tp      ? " (what AsyncTP's chunked GEMMs do not hide)"
                                 : "",
      e.settings.dropout > 0 ? "dropout's mask passes" : "no dropout");
  std::string attention = !e.settings.flash_attention ? "materialized s × s scores"
                          : t.attention_fraction > 0  ? "flash at " + short_number(100.0 * t.attention_fraction, 3) +
                                                           "% of peak, FlashAttention-2's figure"
                                                     : std::string("flash");
  if (e.settings.triton_attention)  // clock/attention_kernel.h
    attention = "Triton: " + attention + ", forward × " + short_number(triton_forward_slowdown) + ", backward × " +
                short_number(triton_backward_slowdown) + " (FlashAttention-2's section 4.1)";
  std::printf(
      "  kernels        compute %.3f s = GEMMs %.3f s (%s kernels) + attention core %.3f s (%s) + memory-bound "
      "%.3f s (%s); each GEMM %.2f us + its FLOPs at the fraction of peak XLA's table measured at its shape (%.0f%% "
      "at 4096³) × %.3f sustained clock or its bytes at %.0f%% "
      "of %s GB/s, whichever is longer; other kernels their bytes at %.0f%% (XLA's H100 GEMM table; "
      "docs/ESTIMATE.md, docs/PERFORMANCE.md)\n",
      t.compute_s, t.gemm_s, grouped(static_cast<std::int64_t>(t.gemm_kernels)).c_str(), t.attention_s,
      attention.c_str(), t.memory_bound_s, e.settings.eager_runtime ? "eager, one kernel per op" : "fused",
      t.gemm_floor_s * 1e6, 100.0 * t.gemm_fraction, t.sustained_clock, 100.0 * t.memory_fraction,
      short_number(t.memory_gbps, 4).c_str(), 100.0 * t.memory_fraction);
  if (t.float8_peak_tflops > 0)
    std::printf(
        "  float8         the layers' linears in FP8 (tensorwise): their GEMMs' FLOPs at %.0f%% of %s TFLOP/s FP8 × "
        "%.3f sustained clock (DeepGEMM's H800 FP8 table), 1-byte operands; casts, amax and transposes %.3f s of the "
        "memory-bound; attention core and head 16-bit; memory above counts 16-bit linears\n",
        100.0 * t.float8_gemm_fraction, short_number(t.float8_peak_tflops, 5).c_str(), t.sustained_clock,
        t.float8_cast_s);
}

void print_time(const Estimate& e) {
  const TimeEstimate& t = e.time;
  std::printf("\nTime per optimizer step (%s):\n", t.note.c_str());
  std::printf("  FLOPs          %s per step = %s FLOPs/token × %s tokens: %s\n", short_number(t.flops_per_step).c_str(),
              short_number(t.flops_per_token).c_str(), grouped(t.tokens_per_step).c_str(), t.flops_formula.c_str());
  std::printf("  data-parallel  %s sent per rank: %s\n", decimal_bytes(t.dp_bytes).c_str(), t.dp_formula.c_str());
  std::printf("  pipeline p2p   %s sent per stage: %s\n", decimal_bytes(t.pp_bytes).c_str(), t.pp_formula.c_str());
  if (!t.tp_formula.empty())
    std::printf("  tensor-par.    %s sent per rank: %s\n", decimal_bytes(t.tp_bytes).c_str(), t.tp_formula.c_str());
  if (!t.ep_formula.empty())
    std::printf("  expert-par.    %s sent per rank (all-to-all): %s\n", decimal_bytes(t.ep_bytes).c_str(),
                t.ep_formula.c_str());
  if (!t.cp_formula.empty()) {
    const std::string passes = t.ring_passes_s > 0
                                   ? "; the ring's merge and copy passes " + short_number(t.ring_passes_s, 3) +
                                         " s of the memory-bound time (fp32 merges, K/V copies)"
                                   : "";
    std::printf("  context-par.   %s sent per rank (ring attention): %s%s\n", decimal_bytes(t.cp_bytes).c_str(),
                t.cp_formula.c_str(), passes.c_str());
  }
  std::printf("  bubble         %.1f%%: %s\n", 100.0 * t.bubble_fraction, t.bubble_formula.c_str());
  if (!t.has_gpu) {
    std::printf("  (give --gpu for modeled seconds)\n");
    return;
  }
  print_gpu_time(e);
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
  if (m.experts > 0)  // a mixture of experts: memory follows the total, compute the active parameters
    std::printf("  (mixture of experts: %lld experts, top-%lld per token: %s active parameters)\n",
                static_cast<long long>(m.experts), static_cast<long long>(m.top_k),
                grouped(m.parameters() - m.idle_expert_parameters).c_str());
  // cp and tp only when they are there: the line of a layout without them reads as it always did.
  const std::string tp =
      (s.layout.cp() > 1 ? " × cp " + std::to_string(s.layout.cp()) : "") +
      (s.layout.tp() > 1 || s.sequence_parallel
           ? " × tp " + std::to_string(s.layout.tp()) + (s.sequence_parallel ? " (sequence parallel)" : "")
           : "") +
      (s.expert_parallel > 1 ? ", experts over ep " + std::to_string(s.expert_parallel) + " (E/ep of them per rank)"
                             : "");
  std::printf(
      "Layout: dp %d × pp %d%s = %d GPUs, %s, ZeRO-%d, %s, micro-batch %d × seq %d, accum %d × %d pipeline "
      "micro-batches (%s) per step, global batch %lld, checkpoint %s, activations %s (%s kernels)%s%s\n",
      s.layout.dp(), s.layout.pp(), tp.c_str(), s.world_size(),
      s.dp_mode == DataParallelMode::naive ? "naive DataParallel" : "DDP", s.zero_stage,
      std::string(precision_name(s.precision)).c_str(), s.micro_batch_size, s.seq, s.accum, s.micro_batches,
      pipeline_schedule_name(s.schedule), static_cast<long long>(s.global_batch()),
      std::string(recompute_name(s.recompute)).c_str(), std::string(activation_mode_name(s.activations)).c_str(),
      s.cuda ? "cuda" : "cpu", s.offload_optimizer ? ", optimizer offload" : "",
      s.offload_params ? ", parameter offload" : "");
  for (const auto& [setting, where] : origins) std::printf("  %s from %s\n", setting.c_str(), where.c_str());
  std::printf("Basis: %s\n", e.memory.basis.c_str());
  std::printf("Sizes in bytes; GB = 10^9 bytes. Ψ = parameters, Nd = data-parallel ranks%s.\n",
              s.layout.tp() > 1 ? ", t = tensor-parallel ranks (each holds its slice, Ψ/t)" : "");
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

// --help's default of a row on the estimate surface: the row's own text, else a run's default.
std::string estimate_default(const RunField& row) {
  if (row.default_text == "-") return "";
  if (!row.default_text.empty() || row.get == nullptr || row.kind == FieldKind::toggle)
    return std::string(row.default_text);
  return field_value_text(row, row.get(RunConfig{}));
}

// --help's text of a row: its help, then the range an integer takes here.
std::string estimate_help(const RunField& row) {
  std::string help(row.help.en);
  if (row.kind == FieldKind::integer) help += ", " + std::to_string(row.min) + "-" + std::to_string(row.max);
  return help;
}

// Every row on the estimate surface, in the schema's order; the value is read after the config files.
// `model_row`: only the model's row (--help lists it first), else every other row.
void add_schema_flags(ArgParser& parser, Flags& f, bool model_row) {
  for (const RunField& row : fields_on(surface::estimate)) {
    const std::string key(row.key);
    if ((key == "model") != model_row) continue;
    if (key == "efficiency") {  // read at once, as a float, as the time model takes it
      parser.add_flag(
          std::string(row.flag), std::string(row.value_name), estimate_help(row), estimate_default(row),
          [&f, flag = std::string(row.flag)](const std::string& v) { f.efficiency = parse_float(flag, v); });
      continue;
    }
    const bool toggle = row.kind == FieldKind::toggle;
    parser.add_flag(std::string(row.flag), toggle ? "" : std::string(row.value_name), estimate_help(row),
                    estimate_default(row),
                    [&f, key, toggle](const std::string& v) { f.given[key] = toggle ? "true" : v; });
  }
}

// The flags of `estimate`, in the order --help lists them: the model, the config files, the schema's other rows,
// the output.
ArgParser estimate_parser(Flags& f) {
  ArgParser parser("shardscope-cli estimate",
                   "Predict the memory of every rank by ledger category (parameters, gradients, optimizer_states,\n"
                   "activations, communication, workspace), each number with its formula; check the fit on a GPU\n"
                   "and name the lever that saves most; model the time of a step. Settings come from the config\n"
                   "files first, then from the flags given. Sizes: GB = 10^9 bytes. Schema of --json: README.md.");
  add_schema_flags(parser, f, true);
  parser.add_string("--deepspeed", "FILE",
                    "DeepSpeed JSON config (batch split, fp16/bf16, ZeRO stage, offload, "
                    "activation checkpointing)",
                    &f.deepspeed);
  parser.add_string("--accelerate", "FILE",
                    "accelerate YAML config (num_processes, num_machines, mixed_precision, "
                    "deepspeed_config, fsdp_config)",
                    &f.accelerate);
  add_schema_flags(parser, f, false);
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
  const auto model = f.given.find("model");  // given empty, it names no model (an error)
  request.model = load_model_shape(model != f.given.end() ? model->second : RunConfig{}.model, &request.warnings);
  ImportedSettings imported = import_settings(f.accelerate, f.deepspeed);
  request.warnings.insert(request.warnings.end(), imported.warnings.begin(), imported.warnings.end());
  request.nodes = imported.nodes;
  for (const SettingsPatch& patch : imported.patches)
    origins.insert(origins.end(), patch.origin.begin(), patch.origin.end());
  EstimateSettings base;
  // A practitioner's default: activations as GPU frameworks keep them (16-bit
  // under fp16/bf16, Korthikanti et al.'s sbh(34 + 5as/h)); --activations
  // shardscope gives this engine's exact (fp32) CPU activations instead.
  base.activations = ActivationMode::formula;
  imported.patches.push_back(patch_from_flags(f));
  request.settings = resolve_settings(base, imported.patches, &request.warnings);
  if (f.efficiency && request.settings.measured_kernels)
    throw ConfigError(
        "--efficiency " + short_number(*f.efficiency) +
        " is the flat time model's one assumption; --time-model kernels has none (give one or the other)");
  // find_gpu_profile's message suggests the nearest name ("did you mean 'A100-80GB'?").
  if (const std::string* gpu = f.text("gpu_profile")) request.gpu = find_gpu_profile(*gpu);
  if (const std::string* mem = f.text("gpu_mem")) request.gpu_memory_bytes = parse_memory_size(*mem);
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
