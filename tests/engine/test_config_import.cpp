// SPDX-License-Identifier: GPL-3.0-or-later
// Config import: Hugging Face config.json (their exact parameter counts:
// test_hf_parameter_counts.cpp), DeepSpeed JSON and accelerate YAML (the
// settings they imply), and every kind of bad
// file: malformed (FormatError with line and column), wrong types and values
// (ConfigError naming key and line), unknown keys (warnings with line).
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/gpu_profiles.h"
#include "config/run_import.h"
#include "core/error.h"
#include "engine/thread_cpu_timer.h"
#include "estimate/config_import.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "io/accelerate_config.h"
#include "io/config_reader.h"
#include "io/deepspeed_config.h"
#include "io/hf_config.h"

using namespace shardscope;

namespace {
const std::string kConfigs = std::string(SHARDSCOPE_FIXTURES) + "/configs/";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (contains(l, part)) return true;
  return false;
}

// Runs `f`, expects exception E, and returns its message.
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}
}  // namespace

class TestConfigImport : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void hf_unknown_keys_are_reported();
  void hf_bad_files_name_the_line_or_key();
  void deepspeed_fixture();
  void deepspeed_unknown_and_auto_keys();
  void deepspeed_bad_files_name_the_line_or_key();
  void accelerate_with_deepspeed_file();
  void accelerate_zero3_plugin_and_fsdp();
  void accelerate_megatron_plugin();
  void accelerate_bad_files_name_the_line_or_key();
  void accelerate_aliases_expand_within_a_bound();
  void unknown_keys_are_reported_in_linear_time();
  void key_lines_follow_the_nesting();
  void values_are_named_by_type_never_dumped();
  void numbers_past_a_double_are_format_errors();
  void hf_shape_keys_have_limits();
  void hf_norm_epsilon_has_limits();
  void global_batch_is_never_narrowed();
  void special_files_are_refused_by_name();
  void gpu_mem_keeps_its_sign();

 private:
  QTemporaryDir dir_;
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path().toStdString() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

void TestConfigImport::hf_unknown_keys_are_reported() {
  const std::string path = write("typo.json",
                                 "{\n  \"model_type\": \"gpt2\",\n  \"n_embd\": 768,\n  \"n_embdd\": 1024,\n"
                                 "  \"n_layer\": 12,\n  \"n_head\": 12,\n  \"n_positions\": 1024,\n"
                                 "  \"vocab_size\": 50257\n}\n");
  const HfModelConfig c = load_hf_config(path);
  QCOMPARE(c.warnings.size(), std::size_t{1});
  QVERIFY2(contains(c.warnings[0], "line 4: n_embdd: unknown key"), c.warnings[0].c_str());
  QCOMPARE(c.training_parameters(), std::int64_t{124'439'808});
  std::vector<std::string> warnings;
  load_model_shape(path, &warnings);
  QCOMPARE(warnings, c.warnings);  // and they reach the estimate's warnings list
}

void TestConfigImport::hf_bad_files_name_the_line_or_key() {
  std::string m = message_of<FormatError>(
      [&] { load_hf_config(write("syntax.json", "{\n  \"model_type\": \"gpt2\",\n  \"n_embd\": 768,,\n}")); });
  QVERIFY2(contains(m, "syntax.json: line 3, column"), m.c_str());
  m = message_of<ConfigError>(
      [&] { load_hf_config(write("missing.json", R"({"model_type": "gpt2", "n_embd": 768})")); });
  QVERIFY2(contains(m, "missing key 'vocab_size'"), m.c_str());
  m = message_of<ConfigError>([&] {
    load_hf_config(write("type.json", "{\"model_type\": \"bert\",\n\"vocab_size\": 30522,\n\"hidden_size\": \"768\"}"));
  });
  QVERIFY2(contains(m, "type.json line 3: hidden_size: expected an integer, got string \"768\""), m.c_str());
  m = message_of<ConfigError>([&] { load_hf_config(write("t5.json", R"({"model_type": "t5", "d_model": 512})")); });
  QVERIFY2(contains(m, "model_type: 't5' is not supported"), m.c_str());
  m = message_of<FormatError>([&] { load_hf_config(write("list.json", "[1, 2]")); });
  QVERIFY2(contains(m, "top level must be a JSON object"), m.c_str());
  m = message_of<ConfigError>([&] { load_hf_config("/no/such/config.json"); });
  QVERIFY2(contains(m, "cannot open '/no/such/config.json'"), m.c_str());
}

void TestConfigImport::deepspeed_fixture() {
  const DeepSpeedConfig c = load_deepspeed_config(kConfigs + "ds_zero2_offload.json");
  QCOMPARE(c.train_batch.value(), std::int64_t{256});
  QCOMPARE(c.micro_batch_size.value(), 4);
  QCOMPARE(c.accum.value(), 8);
  QCOMPARE(c.bf16.value(), true);
  QCOMPARE(c.zero_stage.value(), 2);
  QVERIFY(c.offload_optimizer == OffloadDevice::cpu && c.offload_param == OffloadDevice::none);
  QVERIFY(c.activation_checkpointing);
  QVERIFY(!any_contains(c.warnings, "unknown key"));  // every key of the real config is known
  std::vector<std::string> warnings;
  SettingsPatch dp;
  dp.axes[Axis::dp] = 8;
  const EstimateSettings s = resolve_settings({}, {dp, patch_from_deepspeed(c, warnings)});
  QCOMPARE(s.global_batch(), std::int64_t{256});
  QVERIFY(s.precision == Precision::bf16 && s.zero_stage == 2 && s.offload_optimizer && s.recompute == Recompute::full);
}

void TestConfigImport::deepspeed_unknown_and_auto_keys() {
  const DeepSpeedConfig c = parse_deepspeed_config(
      "{\n \"train_micro_batch_size_per_gpu\": \"auto\",\n \"zero_optimisation\": {\"stage\": 3},\n"
      " \"zero_optimization\": {\n  \"stage\": 1,\n  \"stagee\": 2\n },\n \"fp16\": {\"enabled\": true, \"loss_scal\": "
      "0}\n}",
      "ds.json");
  QVERIFY(!c.micro_batch_size);  // "auto" is left to the command line
  QCOMPARE(c.zero_stage.value(), 1);
  QVERIFY(c.fp16.value());
  QVERIFY(any_contains(c.warnings, "ds.json line 2: train_micro_batch_size_per_gpu: \"auto\""));
  QVERIFY(any_contains(c.warnings, "ds.json line 3: zero_optimisation: unknown key"));
  QVERIFY(any_contains(c.warnings, "ds.json line 6: zero_optimization.stagee: unknown key"));
  QVERIFY(any_contains(c.warnings, "ds.json line 8: fp16.loss_scal: unknown key"));
}

void TestConfigImport::deepspeed_bad_files_name_the_line_or_key() {
  std::string m = message_of<FormatError>(
      [] { parse_deepspeed_config("{\n \"zero_optimization\": {\n  \"stage\": 2,\n }\n}", "ds.json"); });
  QVERIFY2(contains(m, "ds.json: line 4, column"), m.c_str());
  m = message_of<ConfigError>(
      [] { parse_deepspeed_config("{\n\"zero_optimization\": {\n  \"stage\": 4}}", "ds.json"); });
  QVERIFY2(contains(m, "ds.json line 3: zero_optimization.stage: 4 is out of range [0, 3]"), m.c_str());
  m = message_of<ConfigError>(
      [] { parse_deepspeed_config(R"({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}})", "ds.json"); });
  QVERIFY2(contains(m, "zero_optimization.offload_optimizer.device: 'gpu' is not one of none, cpu, nvme"), m.c_str());
  m = message_of<ConfigError>(
      [] { parse_deepspeed_config(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", "ds.json"); });
  QVERIFY2(contains(m, "fp16 and bf16 are both enabled"), m.c_str());
  m = message_of<ConfigError>([] { parse_deepspeed_config(R"({"gradient_accumulation_steps": 2.5})", "ds.json"); });
  QVERIFY2(contains(m, "gradient_accumulation_steps: expected an integer"), m.c_str());
  m = message_of<ConfigError>([] { parse_deepspeed_config(R"({"bf16": {"enabled": "yes"}})", "ds.json"); });
  QVERIFY2(contains(m, "bf16.enabled: expected true or false"), m.c_str());
}

void TestConfigImport::accelerate_with_deepspeed_file() {
  const AccelerateConfig c = load_accelerate_config(kConfigs + "accelerate_deepspeed.yaml");
  QCOMPARE(c.distributed_type, std::string("DEEPSPEED"));
  QCOMPARE(c.num_processes.value(), 8);
  QCOMPARE(c.num_machines.value(), 1);
  QCOMPARE(c.mixed_precision.value(), std::string("bf16"));
  QVERIFY(c.warnings.empty());
  // deepspeed_config_file is resolved beside the YAML.
  QCOMPARE(c.deepspeed_config_file.value(), kConfigs + "ds_zero2_offload.json");
  const ImportedSettings imported = import_settings(kConfigs + "accelerate_deepspeed.yaml", "");
  QCOMPARE(imported.patches.size(), std::size_t{2});
  const EstimateSettings s = resolve_settings({}, imported.patches);
  QCOMPARE(s.layout.dp(), 8);
  QCOMPARE(s.micro_batch_size, 4);
  QCOMPARE(s.accum, 8);
  QVERIFY(s.zero_stage == 2 && s.precision == Precision::bf16 && s.offload_optimizer);
}

void TestConfigImport::accelerate_zero3_plugin_and_fsdp() {
  const ImportedSettings imported = import_settings(kConfigs + "accelerate_zero3_plugin.yaml", "");
  QCOMPARE(imported.nodes, 2);
  EstimateSettings s = resolve_settings({}, imported.patches);
  QCOMPARE(s.layout.dp(), 16);
  QCOMPARE(s.gpus_per_node, 8);
  QCOMPARE(s.accum, 2);
  QVERIFY(s.zero_stage == 3 && s.offload_optimizer && s.offload_params && s.precision == Precision::bf16);
  const std::string fsdp = write("fsdp.yaml",
                                 "distributed_type: FSDP\nmixed_precision: fp16\nnum_processes: 4\nfsdp_config:\n"
                                 "  fsdp_sharding_strategy: SHARD_GRAD_OP\n  fsdp_activation_checkpointing: true\n"
                                 "  fsdp_offload_params: false\n");
  s = resolve_settings({}, import_settings(fsdp, "").patches);
  QVERIFY(s.layout.dp() == 4 && s.zero_stage == 2 && s.recompute == Recompute::full && s.precision == Precision::fp16);
}

// accelerate's Megatron-LM plugin (issue 29 item 7): tp, pp, micro-batches, sequence parallelism,
// selective recompute and the distributed optimizer (ZeRO-1) for the estimator, each named "file: key";
// for a run, what the engine trains (selective recompute refused by name).
void TestConfigImport::accelerate_megatron_plugin() {
  const std::string path = kConfigs + "accelerate_megatron.yaml";
  const ImportedSettings imported = import_settings(path, "");
  const EstimateSettings s = resolve_settings({}, imported.patches);
  QVERIFY(s.layout.tp() == 2 && s.layout.pp() == 2 && s.layout.dp() == 2 && s.micro_batches == 2);
  QVERIFY(s.sequence_parallel && s.recompute == Recompute::selective && s.zero_stage == 1);
  QVERIFY(s.precision == Precision::bf16);
  QCOMPARE(estimate_field_name("tp", imported.patches), path + ": megatron_lm_config.megatron_lm_tp_degree");
  std::string m = message_of<ConfigError>([] {
    parse_accelerate_config("distributed_type: MEGATRON_LM\nmegatron_lm_config:\n  megatron_lm_expert_degree: 2\n",
                            "acc.yaml");
  });
  QVERIFY2(contains(m, "acc.yaml line 3: megatron_lm_config.megatron_lm_expert_degree"), m.c_str());
  const std::string uneven = write("uneven.yaml",
                                   "distributed_type: MEGATRON_LM\nnum_processes: 6\nmegatron_lm_config:\n"
                                   "  megatron_lm_tp_degree: 4\n");
  m = message_of<ConfigError>([&] { (void)import_settings(uneven, ""); });
  QVERIFY2(contains(m, "num_processes 6 does not split into megatron_lm_tp_degree 4"), m.c_str());
  const std::string many_heads = write("tp3.yaml",
                                       "distributed_type: MEGATRON_LM\nnum_processes: 3\nmegatron_lm_config:\n"
                                       "  megatron_lm_tp_degree: 3\n  megatron_lm_sequence_parallelism: true\n");
  QCOMPARE(resolve_settings({}, import_settings(many_heads, "").patches).layout.tp(), 3);

  // A run: tp, dp = num_processes / tp, the distributed optimizer and the clipping.
  RunConfig run;
  const AccelerateConfig tp_only = parse_accelerate_config(
      "distributed_type: MEGATRON_LM\nnum_processes: 4\nmegatron_lm_config:\n  megatron_lm_tp_degree: 2\n"
      "  megatron_lm_use_distributed_optimizer: true\n  megatron_lm_gradient_clipping: 0.5\n",
      "acc.yaml");
  (void)import_accelerate_run(tp_only, run, false);
  QVERIFY(run.layout.tp() == 2 && run.layout.dp() == 2 && run.zero_stage == 1 && run.grad_clip == 0.5f);
  m = message_of<ConfigError>([&] {
    RunConfig refused;
    (void)import_accelerate_run(load_accelerate_config(path), refused, false);
  });
  QVERIFY2(contains(m, path + ": megatron_lm_config.megatron_lm_recompute_activations: true (Megatron-LM's "
                              "selective recompute) is not supported"),
           m.c_str());
  // Sequence parallelism trains: the run takes it.
  RunConfig with_sp;
  (void)import_accelerate_run(parse_accelerate_config("distributed_type: MEGATRON_LM\nnum_processes: 2\n"
                                                      "megatron_lm_config:\n  megatron_lm_tp_degree: 2\n"
                                                      "  megatron_lm_sequence_parallelism: true\n",
                                                      "sp.yaml"),
                              with_sp, false);
  QVERIFY(with_sp.layout.tp() == 2 && with_sp.sequence_parallel);
}

void TestConfigImport::accelerate_bad_files_name_the_line_or_key() {
  std::string m = message_of<FormatError>([] {
    parse_accelerate_config("distributed_type: MULTI_GPU\nnum_processes: 4\n  mixed_precision: [bf16\n", "acc.yaml");
  });
  QVERIFY2(contains(m, "acc.yaml: line 3, column"), m.c_str());
  m = message_of<ConfigError>(
      [] { parse_accelerate_config("distributed_type: MULTI_GPU\nnum_processes: eight\n", "acc.yaml"); });
  QVERIFY2(contains(m, "acc.yaml line 2: num_processes: expected an integer, got 'eight'"), m.c_str());
  m = message_of<ConfigError>([] { parse_accelerate_config("num_processes: 8\n", "acc.yaml"); });
  QVERIFY2(contains(m, "missing key 'distributed_type'"), m.c_str());
  m = message_of<ConfigError>(
      [] { parse_accelerate_config("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 5\n", "acc.yaml"); });
  QVERIFY2(contains(m, "acc.yaml line 3: deepspeed_config.zero_stage: expected 0, 1, 2 or 3, got 5"), m.c_str());
  m = message_of<FormatError>([] { parse_accelerate_config("", "acc.yaml"); });
  QVERIFY2(contains(m, "acc.yaml: the file is empty"), m.c_str());
  m = message_of<FormatError>([] { parse_accelerate_config("- a\n- b\n", "acc.yaml"); });
  QVERIFY2(contains(m, "top level must be a mapping"), m.c_str());
  const AccelerateConfig c = parse_accelerate_config(
      "distributed_type: MULTI_GPU\nnum_proceses: 8\ndeepspeed_config:\n  zero_stagee: 2\n", "acc.yaml");
  QVERIFY(any_contains(c.warnings, "acc.yaml line 2: num_proceses: unknown key"));
  QVERIFY(any_contains(c.warnings, "acc.yaml line 4: deepspeed_config.zero_stagee: unknown key"));
  m = message_of<ConfigError>([] { load_accelerate_config("/no/such/acc.yaml"); });
  QVERIFY2(contains(m, "--accelerate: cannot open"), m.c_str());
}

// 50,000 unknown keys: one warning each, with its line, in linear time (the
// line lookup used to rescan the text from the start for every key: 34-72 s).
// YAML aliases ("billion laughs"): nine anchors, each listing the one before
// ten times, are 10^9 values to walk from a file of 300 bytes. The reader
// counts what the aliases expand to before it walks them: refused at once,
// naming the file and the line; a cycle (an alias inside its own anchor) too.
// An ordinary alias still reads.
void TestConfigImport::accelerate_aliases_expand_within_a_bound() {
  std::string laughs = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {  // appended in steps: GCC 12 warns falsely (-Wrestrict) on "*a" + std::string
    const std::string name = std::to_string(i), prev = std::to_string(i - 1);
    laughs.append("a").append(name).append(": &a").append(name).append(" [*a").append(prev);
    for (int k = 1; k < 10; ++k) laughs.append(", *a").append(prev);
    laughs += "]\n";
  }
  laughs += "distributed_type: MULTI_GPU\n";
  QVERIFY(laughs.size() < 700);
  ThreadCpuTimer timer;  // CPU time: other work on the cores does not count
  timer.start();
  std::string m = message_of<FormatError>([&] { parse_accelerate_config(laughs, "laughs.yaml"); });
  QVERIFY2(contains(m, "laughs.yaml: line 5: its aliases expand the document past 100000 values"), m.c_str());
  QVERIFY2(timer.elapsed() < 2000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  m = message_of<FormatError>([] { parse_accelerate_config("distributed_type: &a [x, *a]\n", "cycle.yaml"); });
  QVERIFY2(contains(m, "cycle.yaml: line 1: an alias inside the node its anchor names"), m.c_str());
  std::string deep = "distributed_type: MULTI_GPU\ndebug: ";
  for (int i = 0; i < 600; ++i) deep += "[";
  m = message_of<FormatError>([&] { parse_accelerate_config(deep, "deep.yaml"); });
  QVERIFY2(contains(m, "deep.yaml: line 2: values nest too deeply (more than 256 levels)"), m.c_str());
  const AccelerateConfig ok = parse_accelerate_config(
      "distributed_type: &type MULTI_GPU\nnum_processes: &n 4\nfsdp_config: {fsdp_sharding_strategy: *type}\n",
      "ok.yaml");
  QCOMPARE(ok.distributed_type, std::string("MULTI_GPU"));
  QCOMPARE(ok.num_processes.value_or(0), 4);
  QCOMPARE(ok.fsdp_sharding_strategy.value_or(""), std::string("MULTI_GPU"));
}

void TestConfigImport::unknown_keys_are_reported_in_linear_time() {
  std::string text =
      "{\"model_type\": \"gpt2\", \"vocab_size\": 1000, \"n_embd\": 64, \"n_layer\": 2, "
      "\"n_head\": 4, \"n_positions\": 128";
  for (int i = 0; i < 50000; ++i) text += ",\n\"unknown_key_" + std::to_string(i) + "\": " + std::to_string(i);
  text += "}";
  ThreadCpuTimer timer;  // CPU time: other work on the cores does not count
  timer.start();
  const HfModelConfig c = parse_hf_config(text, "many.json");
  QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  QCOMPARE(c.warnings.size(), std::size_t{50000});
  QVERIFY(any_contains(c.warnings, "many.json line 50001: unknown_key_49999: unknown key"));
  QVERIFY(any_contains(c.warnings, "many.json line 2: unknown_key_0: unknown key"));
}

void TestConfigImport::key_lines_follow_the_nesting() {
  const JsonConfig json(
      "{\n"
      "  \"a\": {\"stage\": \"stage\"},\n"  // a string value "stage" is not the key
      "  \"list\": [{\"x\": 1},\n"
      "           {\"y\": 2}],\n"
      "  \"b\": {\n"
      "    \"stage\": 3},\n"
      "  \"once\": 1,\n"
      "  \"esc\\u0061ped\": 1\n"
      "}",
      "k.json");
  QCOMPARE(json.line_of({"a", "stage"}), 2);
  QCOMPARE(json.line_of({"b", "stage"}), 6);
  QCOMPARE(json.line_of({"list", "y"}), 4);
  QCOMPARE(json.line_of({"once"}), 7);
  QCOMPARE(json.line_of({"escaped"}), 8);
  // A key given twice in one object is refused where it repeats (nlohmann would keep the last silently).
  const std::string m = message_of<FormatError>([] { JsonConfig("{\n  \"dup\": 1,\n  \"dup\": 2\n}", "d.json"); });
  QVERIFY2(contains(m, "d.json: line 3, column 3: key 'dup' appears twice in one object"), m.c_str());
  QCOMPARE(json.line_of({"b", "nothing"}), 0);
  QCOMPARE(json.line_of({"stage"}), 0);
  QCOMPARE(json.where({"b", "stage"}), std::string("k.json line 6: b.stage"));
}

// A value of the wrong type is named by its type (and a short excerpt), never
// printed whole: dump() of a deeply nested value overflowed the stack.
void TestConfigImport::values_are_named_by_type_never_dumped() {
  const std::string nested = std::string(400, '[') + std::string(400, ']');
  std::string m = message_of<ConfigError>(
      [&] { parse_hf_config("{\"model_type\": \"gpt2\", \"vocab_size\": " + nested + "}", "nested.json"); });
  QCOMPARE(m, std::string("nested.json line 1: vocab_size: expected an integer, got array of 1 element"));
  m = message_of<ConfigError>(
      [&] { parse_deepspeed_config("{\"fp16\": {\"enabled\": \"" + std::string(100000, 'y') + "\"}}", "ds.json"); });
  QVERIFY2(m.size() < 200, m.c_str());
  QVERIFY2(contains(m, "fp16.enabled: expected true or false, got string \"yyy"), m.c_str());
  m = message_of<FormatError>([&] {  // 60,000 levels: refused by depth, no stack overflow
    parse_deepspeed_config("{\"train_batch_size\": " + std::string(60000, '[') + std::string(60000, ']') + "}",
                           "deep.json");
  });
  QCOMPARE(m, std::string("deep.json: line 1, column 533: values nest deeper than 512 levels"));
}

void TestConfigImport::numbers_past_a_double_are_format_errors() {
  std::string m = message_of<FormatError>(
      [] { parse_hf_config("{\"model_type\": \"gpt2\",\n \"vocab_size\": 1e400}", "inf.json"); });
  QCOMPARE(m, std::string("inf.json: line 2, column 16: key 'vocab_size': the number 1e400 is beyond the range of a "
                          "double (about ±1.8e308)"));
  m = message_of<FormatError>([] { parse_deepspeed_config("{\"train_batch_size\": -1e400}", "ds.json"); });
  QVERIFY2(contains(m, "ds.json: line 1, column 22: key 'train_batch_size': the number -1e400"), m.c_str());
  // A float that is whole but past int64 is out of range, not undefined behaviour.
  m = message_of<ConfigError>([] { parse_deepspeed_config("{\"train_batch_size\": 1e300}", "ds.json"); });
  QVERIFY2(contains(m, "train_batch_size: 1e+300 is out of range [1, 1099511627776]"), m.c_str());
}

void TestConfigImport::hf_shape_keys_have_limits() {
  const std::string base = R"({"model_type": "gpt2", "vocab_size": 1000, "n_embd": 64, "n_layer": 2, "n_head": 4, )";
  std::string m = message_of<ConfigError>([&] { parse_hf_config(base + R"("n_positions": 2147483648})", "p.json"); });
  QCOMPARE(m, std::string("p.json line 1: n_positions: 2147483648 is out of range [1, 1073741824]"));
  m = message_of<ConfigError>(
      [] {
        parse_hf_config(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128, )"
                        R"("vocab_size": 18446744073709551615})",
                        "u.json");
      });
  QVERIFY2(contains(m, "vocab_size: 18446744073709551615 is out of range [1, 1073741824]"), m.c_str());
  m = message_of<ConfigError>([] {
    parse_hf_config(R"({"model_type": "gpt2", "vocab_size": 1073741824, "n_embd": 1048576, "n_layer": 65536,
                        "n_head": 16, "n_positions": 1024})",
                    "huge.json");
  });
  QVERIFY2(contains(m, "huge.json: the model's parameter count is out of range ("), m.c_str());
  QVERIFY2(contains(m, "check vocab_size, n_embd, n_inner, n_layer and n_positions"), m.c_str());
  // Within the limits, the counts are exact and positive: 2^30 x 2^10 tokens x width.
  const HfModelConfig wide = parse_hf_config(
      R"({"model_type": "gpt2", "vocab_size": 1073741824, "n_embd": 1024, "n_layer": 1, "n_head": 16,
          "n_positions": 1073741824})",
      "wide.json");
  QCOMPARE(wide.embedding_parameters(), std::int64_t{2} * 1073741824 * 1024);
  QVERIFY(wide.training_parameters() > wide.embedding_parameters());
  const ModelShape shape = model_shape_from_hf(wide);
  QCOMPARE(shape.parameters(), wide.training_parameters());
}

// A norm's epsilon outside (0, 1] is refused by key and line: 1e300 became an
// infinite float that trained a model of constant outputs without a word, and a
// negative one was blamed on "ln_eps", a name no config.json has.
void TestConfigImport::hf_norm_epsilon_has_limits() {
  const std::string gpt2 = R"({"model_type": "gpt2", "vocab_size": 300, "n_embd": 64, "n_layer": 2, "n_head": 4,
                               "n_positions": 64, "layer_norm_epsilon": )";
  std::string m = message_of<ConfigError>([&] { parse_hf_config(gpt2 + "1e300}", "g.json"); });
  QCOMPARE(m, std::string("g.json line 2: layer_norm_epsilon: 1e+300 is out of range (0, 1] (the norm divides by "
                          "sqrt(variance + eps))"));
  m = message_of<ConfigError>([&] { parse_hf_config(gpt2 + "-1e-05}", "g.json"); });
  QVERIFY2(contains(m, "g.json line 2: layer_norm_epsilon: -1e-05 is out of range (0, 1]"), m.c_str());
  m = message_of<ConfigError>([&] { parse_hf_config(gpt2 + "0}", "g.json"); });
  QVERIFY2(contains(m, "layer_norm_epsilon: 0 is out of range"), m.c_str());
  m = message_of<ConfigError>([&] { parse_hf_config(gpt2 + "1e-50}", "g.json"); });
  QVERIFY2(contains(m, "g.json line 2: layer_norm_epsilon: 1e-50 is too small for the engine's 32-bit float"),
           m.c_str());
  QCOMPARE(parse_hf_config(gpt2 + "1e-05}", "g.json").norm_eps, 1e-5);
  m = message_of<ConfigError>([] {
    parse_hf_config(R"({"model_type": "bert", "vocab_size": 300, "hidden_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "intermediate_size": 256, "max_position_embeddings": 64,
                        "layer_norm_eps": 2})",
                    "b.json");
  });
  QVERIFY2(contains(m, "b.json line 3: layer_norm_eps: 2 is out of range (0, 1]"), m.c_str());
  m = message_of<ConfigError>([] {
    parse_hf_config(R"({"model_type": "llama", "vocab_size": 300, "hidden_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "intermediate_size": 256, "rms_norm_eps": -1})",
                    "l.json");
  });
  QVERIFY2(contains(m, "l.json line 2: rms_norm_eps: -1 is out of range (0, 1]"), m.c_str());
}

// DeepSpeed's train_batch_size is up to 2^40; the micro-batch or accumulation
// it implies must fit the command line's limits: never narrowed to an int
// (2^32 + 1 became 1, 2^40 became 0 and was blamed on --micro-batch).
void TestConfigImport::global_batch_is_never_narrowed() {
  auto resolve = [](const std::string& ds) {
    std::vector<std::string> warnings;
    const SettingsPatch patch = patch_from_deepspeed(parse_deepspeed_config(ds, "ds.json"), warnings);
    return resolve_settings({}, {patch});
  };
  std::string m = message_of<ConfigError>([&] { resolve(R"({"train_batch_size": 4294967297})"); });
  QCOMPARE(m, std::string("ds.json: train_batch_size 4294967297 gives a micro-batch per rank of 4294967297, more "
                          "than --micro-batch takes (at most 16777216)"));
  m = message_of<ConfigError>([&] { resolve(R"({"train_batch_size": 1099511627776})"); });
  QVERIFY2(contains(m, "train_batch_size 1099511627776 gives a micro-batch per rank of 1099511627776"), m.c_str());
  m = message_of<ConfigError>(
      [&] { resolve(R"({"train_batch_size": 1099511627776, "train_micro_batch_size_per_gpu": 2})"); });
  QVERIFY2(contains(m, "gives gradient accumulation steps 549755813888, more than --accum takes"), m.c_str());
  const EstimateSettings split =  // 2^40 / 2^24 accumulation steps: a micro-batch of 2^16 fits
      resolve(R"({"train_batch_size": 1099511627776, "gradient_accumulation_steps": 16777216})");
  QCOMPARE(split.micro_batch_size, 65536);
  const EstimateSettings ok = resolve(R"({"train_batch_size": 1073741824, "train_micro_batch_size_per_gpu": 64})");
  QCOMPARE(ok.accum, 16777216);
  QCOMPARE(ok.global_batch(), std::int64_t{1073741824});
}

// A directory, a FIFO (which would block forever) or /dev/null given as a
// config file is refused as what it is, naming the flag and the path.
void TestConfigImport::special_files_are_refused_by_name() {
  const std::string folder = dir_.path().toStdString();
  const std::string fifo = folder + "/config.fifo";
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  std::string m = message_of<ConfigError>([&] { load_accelerate_config(folder); });
  QVERIFY2(contains(m, "--accelerate: '" + folder + "' is a directory, not a file"), m.c_str());
  m = message_of<ConfigError>([&] { load_deepspeed_config(fifo); });
  QCOMPARE(m, "--deepspeed: '" + fifo + "' is a FIFO (named pipe), not a file");
  m = message_of<ConfigError>([&] { load_model_shape("/dev/null", nullptr); });
  QCOMPARE(m, std::string("--model: '/dev/null' is a character device, not a file"));
  m = message_of<ConfigError>([&] { load_model_shape(folder, nullptr); });
  QVERIFY2(contains(m, "--model: '" + folder + "' is a directory"), m.c_str());
  m = message_of<ConfigError>([&] { load_model_shape(write("empty.json", ""), nullptr); });
  QVERIFY2(contains(m, "empty.json' is an empty file"), m.c_str());
  m = message_of<ConfigError>([&] { load_model_shape("gpt-huge", nullptr); });  // not on disk: a preset name
  QVERIFY2(contains(m, "unknown model preset 'gpt-huge'"), m.c_str());
  QCOMPARE(load_model_shape("gpt-tiny", nullptr).preset, std::string("gpt-tiny"));
}

void TestConfigImport::gpu_mem_keeps_its_sign() {
  std::string m = message_of<ConfigError>([] { parse_memory_size("-5GB"); });
  QCOMPARE(m, std::string("--gpu-mem: '-5GB' is not a positive memory size (e.g. 80GB, 80GiB, 24576MiB)"));
  m = message_of<ConfigError>([] { parse_memory_size("0"); });
  QVERIFY2(contains(m, "is not a positive memory size"), m.c_str());
  m = message_of<ConfigError>([] { parse_memory_size("2e6TB"); });
  QVERIFY2(contains(m, "is too large"), m.c_str());
  QCOMPARE(parse_memory_size("80 GB"), std::int64_t{80'000'000'000});
  QCOMPARE(parse_memory_size("24_576MiB"), std::int64_t{24576} << 20);
}

QTEST_GUILESS_MAIN(TestConfigImport)
#include "test_config_import.moc"
