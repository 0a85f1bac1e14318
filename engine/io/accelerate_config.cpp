// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/accelerate_config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/json_text.h"
#include "io/config_reader.h"

namespace shardscope {

namespace {
using Keys = std::set<std::string, std::less<>>;

// clang-format off
// accelerate's BaseConfig and ClusterConfig fields (commands/config/config_args.py),
// the SageMaker ones, and two legacy keys accelerate still converts (fp16, dynamo_backend).
const Keys kTopKeys = {"compute_environment", "distributed_type", "mixed_precision", "use_cpu", "debug",
    "num_processes", "machine_rank", "num_machines", "gpu_ids", "main_process_ip", "main_process_port",
    "rdzv_backend", "same_network", "main_training_function", "enable_cpu_affinity", "fp8_config", "deepspeed_config",
    "fsdp_config", "tp_config", "megatron_lm_config", "ipex_config", "mpirun_config", "downcast_bf16", "tpu_name",
    "tpu_zone", "tpu_use_cluster", "tpu_use_sudo", "command_file", "commands", "tpu_vm", "tpu_env", "dynamo_config",
    "fp16", "dynamo_backend", "ec2_instance_type", "iam_role_name", "image_uri", "profile", "region", "base_job_name",
    "pytorch_version", "transformers_version", "py_version", "sagemaker_inputs_file", "sagemaker_metrics_file",
    "additional_args", "parallelism_config"};
// accelerate's DeepSpeed plugin keys (utils/dataclasses.py, DeepSpeedPlugin).
const Keys kDeepSpeedKeys = {"deepspeed_config_file", "deepspeed_hostfile", "deepspeed_exclusion_filter",
    "deepspeed_inclusion_filter", "deepspeed_multinode_launcher", "gradient_accumulation_steps", "gradient_clipping",
    "offload_optimizer_device", "offload_param_device", "offload_optimizer_nvme_path", "offload_param_nvme_path",
    "zero3_init_flag", "zero3_save_16bit_model", "zero_stage", "deepspeed_moe_layer_cls_names"};
const Keys kFsdpKeys = {"fsdp_sharding_strategy", "fsdp_offload_params", "fsdp_auto_wrap_policy",
    "fsdp_backward_prefetch", "fsdp_backward_prefetch_policy", "fsdp_state_dict_type",
    "fsdp_transformer_layer_cls_to_wrap", "fsdp_use_orig_params", "fsdp_cpu_ram_efficient_loading",
    "fsdp_sync_module_states", "fsdp_forward_prefetch", "fsdp_min_num_params", "fsdp_activation_checkpointing",
    "fsdp_version", "fsdp_reshard_after_forward"};
// accelerate's Megatron-LM plugin keys (commands/launch.py, megatron_lm_* arguments).
const Keys kMegatronKeys = {"megatron_lm_tp_degree", "megatron_lm_pp_degree", "megatron_lm_num_micro_batches",
    "megatron_lm_sequence_parallelism", "megatron_lm_recompute_activations", "megatron_lm_use_distributed_optimizer",
    "megatron_lm_gradient_clipping"};
// clang-format on

// Reads typed values; every error names the file, line and key.
struct Reader {
  const std::string& source;
  std::vector<std::string>& warnings;

  std::string where(const YAML::Node& node, const std::string& key) const {
    return source + " line " + std::to_string(node.Mark().line + 1) + ": " + key;
  }
  template <typename T>
  std::optional<T> get(const YAML::Node& map, const std::string& key, const std::string& path,
                       const char* expected) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    if (!node.IsScalar())
      throw ConfigError(where(node, path) + ": expected " + expected + ", got a " +
                        (node.IsMap() ? "mapping" : "list"));
    try {
      return node.as<T>();
    } catch (const YAML::BadConversion&) {
      throw ConfigError(where(node, path) + ": expected " + expected + ", got '" + bounded_excerpt(node.Scalar()) +
                        "'");
    }
  }
  void unknown_keys(const YAML::Node& map, const std::string& prefix, const Keys& known,
                    const std::string& hint) const {
    for (const auto& item : map) {
      const std::string key = bounded_excerpt(item.first.Scalar());
      if (known.count(key) == 0)
        warnings.push_back(where(item.first, prefix + key) + ": unknown key (" + hint + "); ignored");
    }
  }
  YAML::Node block(const YAML::Node& root, const std::string& key) const {
    const YAML::Node node = root[key];
    if (!node.IsDefined() || node.IsNull()) return YAML::Node();
    if (!node.IsMap()) throw ConfigError(where(node, key) + ": expected a mapping of keys");
    return node;
  }
};

// An accelerate config is a few dozen values; a document past these is damage or an attack.
constexpr std::uint64_t kMaxYamlValues = 100'000;
// Below yaml-cpp's own recursion guard (2000 calls, about 500 flow levels), so the message is ours.
constexpr std::size_t kMaxYamlDepth = 256;

// yaml-cpp shares an aliased node instead of copying it, but every walk over
// the document (refuse_repeated_keys, a lookup, a conversion) visits an alias
// as often as it is named: nine anchors each listing the one before ten times
// ("billion laughs") are 10^9 values to walk, from a file of a few hundred
// bytes. So the parser's events are counted first, an alias counting the
// values of the node it names, and a document that expands past
// kMaxYamlValues or nests past kMaxYamlDepth is refused before it is built.
class YamlSizeGuard final : public YAML::EventHandler {
 public:
  explicit YamlSizeGuard(const std::string& source) : source_(source) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = values_of_anchor_.find(anchor);  // yaml-cpp refuses an alias of an anchor not yet seen
    if (it == values_of_anchor_.end())
      throw FormatError(at(mark) + "an alias inside the node its anchor names (a cycle, which no walk would end)");
    add(mark, it->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    std::uint64_t values_before;
  };
  std::string at(const YAML::Mark& mark) const { return source_ + ": line " + std::to_string(mark.line + 1) + ": "; }
  void add(const YAML::Mark& mark, std::uint64_t values) {
    if (values > kMaxYamlValues - values_)
      throw FormatError(at(mark) + "its aliases expand the document past " + std::to_string(kMaxYamlValues) +
                        " values (each alias repeats the node its anchor names; an accelerate config has a few "
                        "dozen)");
    values_ += values;
  }
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1);
    if (anchor != YAML::NullAnchor) values_of_anchor_[anchor] = 1;
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (open_.size() >= kMaxYamlDepth)
      throw FormatError(at(mark) + "values nest too deeply (more than " + std::to_string(kMaxYamlDepth) + " levels)");
    open_.push_back({anchor, values_});
    add(mark, 1);
  }
  void close() {
    const Open node = open_.back();
    open_.pop_back();
    if (node.anchor != YAML::NullAnchor) values_of_anchor_[node.anchor] = values_ - node.values_before;
  }

  const std::string& source_;
  std::uint64_t values_ = 0;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, std::uint64_t> values_of_anchor_;  // of every closed anchored node
};

// The first document of `yaml_text` (as YAML::Load reads), counted by YamlSizeGuard.
void check_yaml_size(const std::string& yaml_text, const std::string& source) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  YamlSizeGuard guard(source);
  parser.HandleNextDocument(guard);
}

// yaml-cpp keeps a key given twice in one mapping and finds the first, where
// accelerate (PyYAML) takes the last: the file would mean two things. Refused,
// as the JSON reader refuses it (core/json_text.h).
void refuse_repeated_keys(const YAML::Node& node, const std::string& source) {
  if (node.IsSequence()) {
    for (const auto& item : node) refuse_repeated_keys(item, source);
  } else if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& item : node) {
      if (item.first.IsScalar() && !seen.insert(item.first.Scalar()).second)
        throw FormatError(source + " line " + std::to_string(item.first.Mark().line + 1) + ": key '" +
                          bounded_excerpt(item.first.Scalar()) + "' appears twice in one mapping");
      refuse_repeated_keys(item.second, source);
    }
  }
}

// accelerate's Megatron-LM plugin. A key the estimator cannot honour is refused by
// name (a silently ignored tp or pp would plan another run).
void read_megatron(const Reader& r, const YAML::Node& root, AccelerateConfig& c) {
  const YAML::Node m = r.block(root, "megatron_lm_config");
  if (!m.IsMap()) return;
  for (const auto& item : m) {
    const std::string key = bounded_excerpt(item.first.Scalar());
    if (kMegatronKeys.count(key) == 0)
      throw ConfigError(
          r.where(item.first, "megatron_lm_config." + key) +
          ": not a Megatron-LM plugin key ShardScope reads (megatron_lm_tp_degree, megatron_lm_pp_degree, "
          "megatron_lm_num_micro_batches, megatron_lm_sequence_parallelism, "
          "megatron_lm_recompute_activations, megatron_lm_use_distributed_optimizer, "
          "megatron_lm_gradient_clipping)");
  }
  const auto positive = [&](const char* key, std::optional<int>& out) {
    const std::string path = std::string("megatron_lm_config.") + key;
    out = r.get<int>(m, key, path, "an integer");
    if (out && *out < 1)
      throw ConfigError(r.where(m[key], path) + ": must be at least 1 (got " + std::to_string(*out) + ")");
  };
  positive("megatron_lm_tp_degree", c.megatron_tp_degree);
  positive("megatron_lm_pp_degree", c.megatron_pp_degree);
  positive("megatron_lm_num_micro_batches", c.megatron_num_micro_batches);
  const auto flag = [&](const char* key) {
    return r.get<bool>(m, key, std::string("megatron_lm_config.") + key, "true or false");
  };
  c.megatron_sequence_parallelism = flag("megatron_lm_sequence_parallelism");
  c.megatron_recompute_activations = flag("megatron_lm_recompute_activations");
  c.megatron_use_distributed_optimizer = flag("megatron_lm_use_distributed_optimizer");
  c.megatron_gradient_clipping =
      r.get<double>(m, "megatron_lm_gradient_clipping", "megatron_lm_config.megatron_lm_gradient_clipping", "a number");
  if (c.megatron_gradient_clipping && *c.megatron_gradient_clipping < 0)
    throw ConfigError(r.where(m["megatron_lm_gradient_clipping"], "megatron_lm_config.megatron_lm_gradient_clipping") +
                      ": must not be negative");
}

}  // namespace

AccelerateConfig parse_accelerate_config(std::string_view yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    const std::string text(yaml_text);
    check_yaml_size(text, source);  // before a walk over aliases could take forever
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw FormatError(source + ": line " + std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg + " (is this a YAML file?)");
  }
  if (root.IsNull() || !root.IsDefined()) throw FormatError(source + ": the file is empty");
  if (!root.IsMap())
    throw FormatError(source + ": the top level must be a mapping of keys (as `accelerate config` writes)");
  refuse_repeated_keys(root, source);
  AccelerateConfig c;
  c.source = source;
  const Reader r{source, c.warnings};
  r.unknown_keys(root, "", kTopKeys, "not an accelerate config key");
  const auto type = r.get<std::string>(root, "distributed_type", "distributed_type", "a string");
  if (!type) throw ConfigError(source + ": missing key 'distributed_type' (accelerate requires it, e.g. MULTI_GPU)");
  c.distributed_type = *type;
  c.mixed_precision = r.get<std::string>(root, "mixed_precision", "mixed_precision", "no, fp16, bf16 or fp8");
  c.num_processes = r.get<int>(root, "num_processes", "num_processes", "an integer");
  c.num_machines = r.get<int>(root, "num_machines", "num_machines", "an integer");
  if (c.num_processes && *c.num_processes < 1) {
    if (*c.num_processes != -1)
      throw ConfigError(r.where(root["num_processes"], "num_processes") + ": must be at least 1");
    c.num_processes.reset();  // -1: "set at launch" (e.g. by SLURM)
  }
  if (c.num_machines && *c.num_machines < 1)
    throw ConfigError(r.where(root["num_machines"], "num_machines") + ": must be at least 1");

  if (const YAML::Node ds = r.block(root, "deepspeed_config"); ds.IsMap()) {
    r.unknown_keys(ds, "deepspeed_config.", kDeepSpeedKeys, "not an accelerate DeepSpeed plugin key");
    c.zero_stage = r.get<int>(ds, "zero_stage", "deepspeed_config.zero_stage", "0, 1, 2 or 3");
    if (c.zero_stage && (*c.zero_stage < 0 || *c.zero_stage > 3))
      throw ConfigError(r.where(ds["zero_stage"], "deepspeed_config.zero_stage") + ": expected 0, 1, 2 or 3, got " +
                        std::to_string(*c.zero_stage));
    c.accum =
        r.get<int>(ds, "gradient_accumulation_steps", "deepspeed_config.gradient_accumulation_steps", "an integer");
    c.gradient_clipping = r.get<double>(ds, "gradient_clipping", "deepspeed_config.gradient_clipping", "a number");
    if (c.gradient_clipping && *c.gradient_clipping < 0)
      throw ConfigError(r.where(ds["gradient_clipping"], "deepspeed_config.gradient_clipping") +
                        ": must not be negative");
    c.offload_optimizer_device = r.get<std::string>(ds, "offload_optimizer_device",
                                                    "deepspeed_config.offload_optimizer_device", "none, cpu or nvme");
    c.offload_param_device =
        r.get<std::string>(ds, "offload_param_device", "deepspeed_config.offload_param_device", "none, cpu or nvme");
    if (auto file =
            r.get<std::string>(ds, "deepspeed_config_file", "deepspeed_config.deepspeed_config_file", "a path")) {
      namespace fs = std::filesystem;
      const fs::path beside = fs::path(source).parent_path() / *file;
      std::error_code ec;
      c.deepspeed_config_file = fs::path(*file).is_relative() && fs::exists(beside, ec) ? beside.string() : *file;
    }
    for (const auto* device : {&c.offload_optimizer_device, &c.offload_param_device})
      if (*device && **device != "none" && **device != "cpu" && **device != "nvme")
        throw ConfigError(source + ": deepspeed_config: offload device '" + bounded_excerpt(**device) +
                          "' is not one of none, cpu, nvme");
  }
  read_megatron(r, root, c);
  if (const YAML::Node fsdp = r.block(root, "fsdp_config"); fsdp.IsMap()) {
    r.unknown_keys(fsdp, "fsdp_config.", kFsdpKeys, "not an accelerate FSDP key");
    c.fsdp_sharding_strategy =
        r.get<std::string>(fsdp, "fsdp_sharding_strategy", "fsdp_config.fsdp_sharding_strategy", "a strategy name");
    c.fsdp_offload_params =
        r.get<bool>(fsdp, "fsdp_offload_params", "fsdp_config.fsdp_offload_params", "true or false");
    c.fsdp_activation_checkpointing = r.get<bool>(fsdp, "fsdp_activation_checkpointing",
                                                  "fsdp_config.fsdp_activation_checkpointing", "true or false");
  }
  return c;
}

AccelerateConfig load_accelerate_config(const std::string& path) {
  return parse_accelerate_config(read_config_file(path, "--accelerate"), path);
}

}  // namespace shardscope
