// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/run_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "config/run_schema.h"
#include "core/error.h"

namespace shardscope {

namespace {

using nlohmann::json;

std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// Sets fields of the run from one file; every refusal names the file and the key.
struct Importer {
  std::string source;
  RunConfig& config;
  std::vector<std::string> parts;   // the summary's pieces
  std::vector<std::string> fields;  // the keys set
  std::vector<SchemaValue> values;  // a DeepSpeed file's values of the rows both surfaces read
  std::vector<std::pair<std::string, std::string>> origin;  // (key set, "file: its key"), the last setter's

  [[noreturn]] void refuse(const std::string& key, const std::string& why) const {
    throw ConfigError(source + ": " + key + ": " + why);
  }
  void set(std::string_view field, const json& value, const std::string& key) {
    try {
      set_field(config, run_field(field), value);
      if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.emplace_back(field);
      origin.emplace_back(field, source + ": " + key);
    } catch (const FieldError& e) {
      refuse(key, e.text([](std::string_view k) { return flag_of(k); }));
    }
  }
  // The file's value of a row, as the estimator reads it too (plan_values_from_deepspeed); nullptr: not set.
  const SchemaValue* value(std::string_view key) const {
    for (const SchemaValue& v : values)
      if (v.key == key) return &v;
    return nullptr;
  }
  std::optional<std::int64_t> integer(std::string_view key) const {
    const SchemaValue* v = value(key);
    return v ? std::optional(v->value.get<std::int64_t>()) : std::nullopt;
  }
  // "zero_optimization.stage" of "ds.json: zero_optimization.stage".
  std::string file_key(const SchemaValue& v) const { return v.from.substr(source.size() + 2); }
  std::string summary() const {
    std::string out = "from " + source + ":";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? " " : ", ") + parts[i];
    return parts.empty() ? out + " nothing the run reads" : out;
  }
};

// DeepSpeed's batch rules (runtime/config.py, _set_batch_related_parameters):
// two of the three keys give the third; all three must agree.
void import_batch(Importer& im) {
  const std::int64_t dp = im.config.layout.dp();
  const std::optional<std::int64_t> tb = im.integer("batch"), mb = im.integer("micro_batch"), ac = im.integer("accum");
  if (!tb && !mb) {
    if (ac) im.set("accum", *ac, "gradient_accumulation_steps"), im.parts.push_back("accum " + std::to_string(*ac));
    return;
  }
  const std::int64_t accum = ac ? *ac : (tb && mb ? *tb / (*mb * dp) : 1);
  const std::int64_t micro = mb ? *mb : *tb / (dp * accum);
  const std::int64_t train = tb ? *tb : micro * accum * dp;
  if (micro < 1 || accum < 1 || train != micro * accum * dp)
    im.refuse("train_batch_size", std::to_string(train) + " is not train_micro_batch_size_per_gpu " +
                                      std::to_string(micro) + " x gradient_accumulation_steps " +
                                      std::to_string(accum) + " x dp " + std::to_string(dp) + " (= " +
                                      std::to_string(micro * accum * dp) + "), as DeepSpeed requires");
  im.set("accum", accum, "gradient_accumulation_steps");
  im.set("batch", train * im.config.micro_batches, "train_batch_size");
  im.parts.push_back("batch " + std::to_string(train) + " = micro " + std::to_string(micro) + " x accum " +
                     std::to_string(accum) + " x dp " + std::to_string(dp));
}

void import_precision(Importer& im, const DeepSpeedConfig& ds) {
  const DeepSpeedTrainKeys& t = ds.train;
  const SchemaValue* precision = im.value("precision");  // bf16.enabled wins over fp16.enabled, as in DeepSpeed
  if (precision == nullptr) return;
  if (precision->value != "fp16") {
    im.set("precision", precision->value, precision->value == "bf16" ? "bf16.enabled" : "fp16.enabled");
    im.parts.push_back(precision->value.get<std::string>());
    return;
  }
  im.set("precision", "fp16", "fp16.enabled");
  im.set("loss_scaler", "deepspeed", "fp16");
  if (t.loss_scale) im.set("loss_scale", *t.loss_scale, "fp16.loss_scale");
  if (t.initial_scale_power) im.set("initial_scale_power", *t.initial_scale_power, "fp16.initial_scale_power");
  if (t.loss_scale_window) im.set("scale_window", *t.loss_scale_window, "fp16.loss_scale_window");
  if (t.hysteresis) im.set("hysteresis", *t.hysteresis, "fp16.hysteresis");
  if (t.min_loss_scale) im.set("min_loss_scale", *t.min_loss_scale, "fp16.min_loss_scale");
  im.parts.push_back(im.config.loss_scale > 0
                         ? "fp16 (deepspeed scaler, static scale " + num(im.config.loss_scale) + ")"
                         : "fp16 (deepspeed scaler, initial scale 2^" + std::to_string(im.config.initial_scale_power) + ")");
}

void import_zero(Importer& im, const DeepSpeedConfig& ds) {
  if (const SchemaValue* v = im.value("offload_optimizer"))
    im.refuse(im.file_key(*v),
              "offload is not supported by the engine (its ranks keep every "
              "state on their device); remove the block or set device none");
  if (const SchemaValue* v = im.value("offload_params"))
    im.refuse(im.file_key(*v), "offload is not supported by the engine; set device none");
  if (const SchemaValue* v = im.value("zero")) {
    im.set("zero", v->value, im.file_key(*v));
    im.parts.push_back("ZeRO-" + v->value.dump());
  }
  // partition_activations splits checkpoints over the tensor-parallel group, one rank in every layout here:
  // nothing to split (the parser warns). cpu_checkpointing would move them off the device: not followed.
  if (ds.cpu_checkpointing)
    im.refuse("activation_checkpointing.cpu_checkpointing",
              "true is not supported: the engine keeps checkpointed activations on the rank's device");
  if (const SchemaValue* v = im.value("checkpoint"))
    im.set("checkpoint", v->value, im.file_key(*v)), im.parts.push_back("checkpointing");
}

// reduce_bucket_size counts elements of the gradients' type (2 bytes in fp16/bf16); --bucket-mb
// counts the MiB (2^20 bytes, PyTorch's bucket_cap_mb) the DDP strategy cuts buckets at, so the bytes are the file's.
void import_bucket(Importer& im, const DeepSpeedTrainKeys& t) {
  if (!t.reduce_bucket_size) return;
  const double bytes = static_cast<double>(*t.reduce_bucket_size) * (im.config.mixed_precision() ? 2 : 4);
  im.set("bucket_mb", bytes / (1024 * 1024), "zero_optimization.reduce_bucket_size");
  im.parts.push_back("bucket " + num(im.config.bucket_mb) + " MiB");
}

void import_optimizer(Importer& im, const DeepSpeedTrainKeys& t) {
  if (t.optimizer_type) {
    std::string type = *t.optimizer_type;
    std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
    if (type != "adam" && type != "adamw")
      im.refuse("optimizer.type", "'" + *t.optimizer_type + "' is not supported: the engine trains with AdamW (Adam or AdamW)");
  }
  if (t.adam_w_mode && !*t.adam_w_mode)
    im.refuse("optimizer.params.adam_w_mode", "false (L2-regularized Adam) is not supported: the engine's AdamW decouples weight decay");
  if (t.beta1 && std::fabs(*t.beta1 - 0.9) > 1e-9)
    im.refuse("optimizer.params.betas", "beta1 " + num(*t.beta1) + " is not supported: the engine's AdamW uses beta1 0.9");
  if (t.eps && std::fabs(*t.eps - 1e-8) > 1e-15)
    im.refuse("optimizer.params.eps", num(*t.eps) + " is not supported: the engine's AdamW uses eps 1e-8");
  if (t.lr) im.set("lr", *t.lr, "optimizer.params.lr");
  if (t.beta2) im.set("adam_beta2", *t.beta2, "optimizer.params.betas");
  if (t.weight_decay) im.set("weight_decay", *t.weight_decay, "optimizer.params.weight_decay");
}

void import_scheduler(Importer& im, const DeepSpeedTrainKeys& t, std::vector<std::string>& warnings) {
  if (!t.scheduler_type) {
    if (t.optimizer_type) {  // DeepSpeed's own optimizer without a scheduler keeps its lr
      im.set("warmup", 0, "scheduler");
      im.set("min_lr_ratio", 1.0, "scheduler");
      im.parts.push_back("constant lr (no scheduler)");
    }
    return;
  }
  const std::string& type = *t.scheduler_type;
  if (type != "WarmupLR" && type != "WarmupCosineLR")
    im.refuse("scheduler.type", "'" + type + "' is not supported: the engine's schedule is a linear warm-up, then " +
                                    "constant (WarmupLR) or cosine decay (WarmupCosineLR)");
  if (t.warmup_type && *t.warmup_type != "linear")
    im.refuse("scheduler.params.warmup_type", "'" + *t.warmup_type + "' is not supported: the engine warms up linearly");
  if (!t.warmup_type)
    warnings.push_back(im.source + ": scheduler.params.warmup_type: absent (DeepSpeed's default is log); the run warms up linearly");
  if (t.warmup_num_steps) im.set("warmup", *t.warmup_num_steps, "scheduler.params.warmup_num_steps");
  if (type == "WarmupLR") {
    if (t.warmup_min_lr.value_or(0.0) > 0)
      im.refuse("scheduler.params.warmup_min_lr", "must be 0: the engine warms up from 0");
    if (t.warmup_max_lr) im.set("lr", *t.warmup_max_lr, "scheduler.params.warmup_max_lr");
    im.set("min_lr_ratio", 1.0, "scheduler.type");  // constant after the warm-up
  } else {
    if (t.warmup_min_ratio.value_or(0.0) > 0)
      im.refuse("scheduler.params.warmup_min_ratio", "must be 0: the engine warms up from 0");
    im.set("min_lr_ratio", t.cos_min_ratio.value_or(0.0001), "scheduler.params.cos_min_ratio");
    if (t.total_num_steps) im.set("steps", *t.total_num_steps, "scheduler.params.total_num_steps");
  }
}

// Keys that change a step's arithmetic in a way the engine does not follow, refused when set.
void refuse_unfollowed(Importer& im, const DeepSpeedTrainKeys& t) {
  if (t.prescale_gradients.value_or(false))
    im.refuse("prescale_gradients", "true is not supported: the engine averages gradients after the reduction");
  if (t.gradient_predivide_factor && std::fabs(*t.gradient_predivide_factor - 1.0) > 1e-12)
    im.refuse("gradient_predivide_factor", num(*t.gradient_predivide_factor) + " is not supported (only 1.0)");
  if (t.fp16_master_weights_and_grads.value_or(false))
    im.refuse("fp16.fp16_master_weights_and_grads", "true is not supported: the engine keeps fp32 master weights");
}

void append(RunImport& out, const std::vector<std::string>& warnings) {
  out.warnings.insert(out.warnings.end(), warnings.begin(), warnings.end());
}

}  // namespace

RunImport import_deepspeed_run(const DeepSpeedConfig& ds, RunConfig& config) {
  RunImport out;
  append(out, ds.warnings);
  append(out, ds.train.warnings);
  std::vector<std::string> noted;  // the file's warnings, appended above
  // The rows both surfaces read, read once (config/plan_import.cpp); the run refuses what a planner takes.
  Importer im{ds.source, config, {}, {}, plan_values_from_deepspeed(ds, noted), {}};
  refuse_unfollowed(im, ds.train);
  import_batch(im);
  import_zero(im, ds);
  import_precision(im, ds);
  import_bucket(im, ds.train);  // after the precision: its bytes per element
  import_optimizer(im, ds.train);
  import_scheduler(im, ds.train, out.warnings);
  if (ds.train.gradient_clipping) im.set("grad_clip", *ds.train.gradient_clipping, "gradient_clipping");
  if (ds.train.lr || ds.train.warmup_max_lr) im.parts.push_back("lr " + num(config.lr));
  if (ds.train.warmup_num_steps) im.parts.push_back("warmup " + std::to_string(*ds.train.warmup_num_steps));
  if (ds.train.gradient_clipping) im.parts.push_back("grad clip " + num(config.grad_clip));
  out.summary = im.summary();
  out.fields = im.fields;
  out.origin = im.origin;
  return out;
}

namespace {

// The run's refusals, before the shared reading (plan_values_from_accelerate),
// which takes what a planner may approximate and would say it in other words.
void refuse_unrunnable(Importer& im, const AccelerateConfig& acc) {
  const std::string& type = acc.distributed_type;
  if (type != "NO" && type != "MULTI_CPU" && type != "MULTI_GPU" && type != "DEEPSPEED" && type != "MEGATRON_LM")
    im.refuse("distributed_type",
              "'" + type + "' is not supported: the engine runs NO, MULTI_CPU, MULTI_GPU, DEEPSPEED or MEGATRON_LM");
  const int processes = type == "NO" ? 1 : acc.num_processes.value_or(1);
  const int machines = acc.num_machines.value_or(1);
  if (processes % machines != 0)
    im.refuse("num_processes", std::to_string(processes) + " is not a multiple of num_machines " + std::to_string(machines));
}

void import_processes(Importer& im, const AccelerateConfig& acc, bool keep_dp, const std::string& pp_from) {
  const std::optional<std::int64_t> shared = im.integer("dp");  // num_processes, as the estimator reads it
  const bool megatron = acc.distributed_type == "MEGATRON_LM";  // dp is num_processes / (tp × pp) already
  const int processes = acc.distributed_type == "NO" ? 1
                        : megatron                   ? acc.num_processes.value_or(1)
                                                     : static_cast<int>(shared.value_or(1));
  const int machines = acc.num_machines.value_or(1);
  if (!keep_dp && megatron) {
    im.set("dp", shared.value_or(1), "num_processes");
  } else if (!keep_dp) {
    if (processes % im.config.layout.pp() != 0)
      im.refuse("num_processes", std::to_string(processes) + " is not a multiple of the " +
                                     std::to_string(im.config.layout.pp()) + " pipeline stages of " + pp_from);
    im.set("dp", processes / im.config.layout.pp(), "num_processes");
  }
  im.parts.push_back(acc.distributed_type + ", " + std::to_string(processes) + " process" +
                     (processes > 1 ? "es" : "") +
                     (machines > 1 ? " on " + std::to_string(machines) + " machines" : "") + " (dp " +
                     std::to_string(im.config.layout.dp()) + ", pp " + std::to_string(im.config.layout.pp()) +
                     (megatron ? ", tp " + std::to_string(im.config.layout.tp()) : "") + ", ranks as threads)");
}

// accelerate's Megatron-LM plugin for a run: tp, pp, micro-batches, sequence parallelism and the
// distributed optimizer (ZeRO-1) as the estimator reads them; what the engine does not train is refused by name.
void import_megatron(Importer& im, const AccelerateConfig& acc) {
  if (acc.megatron_recompute_activations.value_or(false))
    im.refuse("megatron_lm_config.megatron_lm_recompute_activations",
              "true (Megatron-LM's selective recompute) is not supported: the engine recomputes whole layers "
              "(--checkpoint)");
  for (const char* key : {"tp", "pp", "micro_batches", "zero", "sequence_parallel"})  // tp, pp: import_processes' part
    if (const SchemaValue* v = im.value(key)) im.set(key, v->value, im.file_key(*v));
  if (im.value("sequence_parallel") != nullptr) im.parts.push_back("sequence parallel");
  if (const SchemaValue* m = im.value("micro_batches")) im.parts.push_back("micro-batches " + m->value.dump());
  if (im.value("zero") != nullptr) im.parts.push_back("ZeRO-1 (distributed optimizer)");
  if (acc.megatron_gradient_clipping) {
    im.set("grad_clip", *acc.megatron_gradient_clipping, "megatron_lm_config.megatron_lm_gradient_clipping");
    im.parts.push_back("grad clip " + num(*acc.megatron_gradient_clipping));
  }
}

void refuse_mixed_precision(Importer& im, const AccelerateConfig& acc) {
  if (!acc.mixed_precision) return;
  const std::string& mp = *acc.mixed_precision;
  if (mp == "fp8") im.refuse("mixed_precision", "fp8 is not supported by the engine (no, fp16 or bf16)");
  if (mp != "no" && mp != "fp16" && mp != "bf16")
    im.refuse("mixed_precision", "'" + mp + "' is not one of no, fp16, bf16");
}

void import_mixed_precision(Importer& im, const AccelerateConfig& acc) {
  const SchemaValue* precision = im.value("precision");  // fp32, fp16 or bf16 (refuse_mixed_precision ran)
  if (precision == nullptr) return;
  const std::string& mp = *acc.mixed_precision;
  im.set("precision", precision->value, im.file_key(*precision));
  const bool ds = acc.distributed_type == "DEEPSPEED";
  if (mp == "fp16") im.set("loss_scaler", ds ? "deepspeed" : "torch", "mixed_precision");
  im.parts.push_back(mp == "fp16" ? std::string("fp16 (") + (ds ? "deepspeed" : "torch") + " scaler)" : mp == "no" ? "fp32" : mp);
}

// The DeepSpeed plugin: the JSON it points to, then its inline keys.
void refuse_offload(Importer& im, const AccelerateConfig& acc) {
  if (acc.distributed_type != "DEEPSPEED") return;
  for (const auto& [device, key] : {std::pair{&acc.offload_optimizer_device, "deepspeed_config.offload_optimizer_device"},
                                    std::pair{&acc.offload_param_device, "deepspeed_config.offload_param_device"}})
    if (*device && **device != "none") im.refuse(key, "offload is not supported by the engine; set none");
}

void import_plugin(Importer& im, const AccelerateConfig& acc, RunImport& out) {
  if (acc.deepspeed_config_file) {
    const DeepSpeedConfig ds =
        load_deepspeed_config(*acc.deepspeed_config_file, acc.source + ": deepspeed_config.deepspeed_config_file");
    const RunImport inner = import_deepspeed_run(ds, im.config);
    append(out, inner.warnings);
    out.summary = inner.summary;
    im.fields.insert(im.fields.end(), inner.fields.begin(), inner.fields.end());
    im.origin.insert(im.origin.end(), inner.origin.begin(), inner.origin.end());
  }
  if (const SchemaValue* zero = im.value("zero")) {
    im.set("zero", zero->value, im.file_key(*zero));
    im.parts.push_back("ZeRO-" + std::to_string(zero->value.get<int>()));
  }
  if (const SchemaValue* accum = im.value("accum")) {
    im.set("accum", accum->value, im.file_key(*accum));
    im.parts.push_back("accum " + std::to_string(accum->value.get<int>()));
  }
  if (acc.gradient_clipping) {
    im.set("grad_clip", *acc.gradient_clipping, "deepspeed_config.gradient_clipping");
    im.parts.push_back("grad clip " + num(*acc.gradient_clipping));
  }
}

}  // namespace

RunImport import_accelerate_run(const AccelerateConfig& acc, RunConfig& config, bool keep_dp,
                                const std::string& pp_from) {
  RunImport out;
  append(out, acc.warnings);
  Importer im{acc.source, config, {}, {}, {}, {}};
  const std::string& type = acc.distributed_type;
  refuse_unrunnable(im, acc);
  refuse_mixed_precision(im, acc);
  refuse_offload(im, acc);
  std::vector<std::string> noted;  // the file's warnings, appended above
  // The rows every surface reads, read once (config/plan_import.cpp), past the run's refusals.
  im.values = plan_values_from_accelerate(acc, noted);
  if (type == "MEGATRON_LM") import_megatron(im, acc);  // tp and pp before dp
  import_processes(im, acc, keep_dp, pp_from);
  import_mixed_precision(im, acc);
  const bool plugin = acc.zero_stage || acc.accum || acc.gradient_clipping || acc.deepspeed_config_file ||
                      acc.offload_optimizer_device || acc.offload_param_device;
  if (type == "DEEPSPEED")
    import_plugin(im, acc, out);
  else if (plugin)
    out.warnings.push_back(acc.source + ": deepspeed_config: ignored (distributed_type is " + type + ")");
  if (acc.fsdp_sharding_strategy || acc.fsdp_offload_params || acc.fsdp_activation_checkpointing)
    out.warnings.push_back(acc.source + ": fsdp_config: ignored (distributed_type is " + type + ")");
  out.summary = im.summary() + (out.summary.empty() ? "" : "; " + out.summary);
  out.fields = im.fields;
  out.origin = im.origin;
  return out;
}

}  // namespace shardscope
