// SPDX-License-Identifier: GPL-3.0-or-later
// The run-config schema (config/run_schema.h): every row is complete and
// consistent, every field round-trips through its JSON value and its CLI text,
// and a refused config names its fields in the words of the surface that set
// them: flags on the command line, labels in the panel (English and Chinese),
// keys in JSON, and the key of the DeepSpeed JSON or accelerate YAML that set
// the value.
#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <set>

#include "config/run_import.h"
#include "config/run_schema.h"
#include "estimate/config_import.h"
#include "estimate/estimate_settings.h"
#include "train/metrics_json.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename F>
FieldError field_error_of(F&& f) {
  try {
    f();
  } catch (const FieldError& e) {
    return e;
  }
  return FieldError("(no error)", "");
}

std::string label_name(std::string_view key, bool chinese) {
  const RunField& field = run_field(key);
  return std::string(chinese ? field.label.zh : field.label.en);
}
}  // namespace

class TestRunSchema : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void everyRowIsComplete() {
    std::set<std::string_view> keys, flags;
    for (const RunField& f : run_fields()) {
      QVERIFY2(keys.insert(f.key).second, f.key.data());
      if (!f.flag.empty()) QVERIFY2(flags.insert(f.flag).second, f.flag.data());
      QVERIFY2(!f.help.en.empty() && !f.help.zh.empty(), f.key.data());
      QVERIFY2(f.label.en.empty() == f.label.zh.empty(), f.key.data());
      QVERIFY2(f.get != nullptr && f.set != nullptr, f.key.data());
      QVERIFY2(f.kind != FieldKind::choice || !f.choices.empty(), f.key.data());
      QVERIFY2(f.kind != FieldKind::integer || f.min <= f.max, f.key.data());
      QVERIFY2(f.kind == FieldKind::toggle || !f.value_name.empty() || f.flag.empty(), f.key.data());
    }
    // The settings a DeepSpeed JSON or an accelerate YAML sets, by the key there.
    QCOMPARE(run_field("zero").deepspeed, std::string_view("zero_optimization.stage"));
    QCOMPARE(run_field("accum").accelerate, std::string_view("deepspeed_config.gradient_accumulation_steps"));
  }

  // The default of every field is in its own range, and comes back the same
  // through JSON and through the text the CLI would take.
  void defaultsRoundTrip() {
    const RunConfig defaults;
    check_field_ranges(defaults);
    for (const RunField& f : run_fields()) {
      const nlohmann::json value = f.get(defaults);
      RunConfig c;
      set_field(c, f, value);
      QVERIFY2(f.get(c) == value, f.key.data());
      if (f.kind == FieldKind::toggle) continue;
      RunConfig from_text;
      set_field(from_text, f, field_value_from_text(f, field_value_text(f, value)));
      QVERIFY2(f.get(from_text) == value, (std::string(f.key) + ": " + field_value_text(f, value)).c_str());
    }
  }

  // run_config_flags (the GUI's processes start `train` with them): parsed
  // back flag by flag they give the same config; the defaults need no flag.
  void configFlagsRoundTrip() {
    QVERIFY(run_config_flags(RunConfig{}).empty());
    RunConfig config;
    config.layout[Axis::dp] = 2;
    config.layout[Axis::pp] = 2;
    config.micro_batches = 4;
    config.lr = 3e-4f / 7;  // no short decimal
    config.precision = Precision::bf16;
    config.profile_ops = true;
    config.gpus = {0, 1};
    const std::vector<std::string> flags = run_config_flags(config);
    RunConfig parsed;
    for (std::size_t i = 0; i < flags.size(); ++i) {
      const RunField* field = nullptr;
      for (const RunField& f : run_fields())
        if (f.flag == flags[i]) field = &f;
      QVERIFY2(field != nullptr, flags[i].c_str());
      const bool toggle = field->kind == FieldKind::toggle;
      set_field(parsed, *field, field_value_from_text(*field, toggle ? "" : flags[++i]));
    }
    QCOMPARE(run_config_to_json(parsed).dump(), run_config_to_json(config).dump());
    QVERIFY(std::find(flags.begin(), flags.end(), "--profile-ops") != flags.end());
  }

  void badValuesNameTheField() {
    QCOMPARE(std::string(field_error_of([] { field_value_from_text(run_field("steps"), "ten"); }).what()),
             std::string("--steps: 'ten' is not an integer"));
    QCOMPARE(std::string(field_error_of([] { field_value_from_text(run_field("zero"), "4"); }).what()),
             std::string("--zero: 4 is out of range [0, 3]"));
    QCOMPARE(std::string(field_error_of([] { field_value_from_text(run_field("dp_mode"), "fsdp"); }).what()),
             std::string("--dp-mode: 'fsdp' is not one of naive, ddp"));
    QCOMPARE(std::string(field_error_of([] { field_value_from_text(run_field("lr"), "-1"); }).what()),
             std::string("--lr must be in (0, 10) (got -1)"));
    QCOMPARE(std::string(field_error_of([] { field_value_from_text(run_field("gpus"), "0,x"); }).what()),
             std::string("--gpus: 'x' is not an integer"));
    QCOMPARE(std::string(field_error_of([] { check_field_value(run_field("batch"), "16"); }).what()),
             std::string("--batch must be an integer"));
    QCOMPARE(std::string(field_error_of([] {
               RunConfig c;
               set_field(c, run_field("inject_failure"), "3");
             }).what()),
             std::string("--inject-failure: expected RANK:STEP, got '3'"));
  }

  // One rule, named by flag, by panel label in either language, and by JSON key.
  void aRuleSpeaksEachSurfacesWords() {
    RunConfig c;
    c.layout[Axis::dp] = 2;
    c.layout[Axis::pp] = 2;
    c.zero_stage = 2;
    c.batch = 16;
    const FieldError e = field_error_of([&] { validate_run_config(c); });
    QVERIFY2(contains(e.what(), "--zero 2 with --pp 2 is refused"), e.what());
    const std::string en = e.text([](std::string_view key) { return label_name(key, false); });
    QVERIFY2(contains(en, "ZeRO stage 2 with Pipeline stages 2 is refused"), en.c_str());
    QVERIFY2(!contains(en, "--"), en.c_str());
    const std::string zh = e.text([](std::string_view key) { return label_name(key, true); }, true);
    QVERIFY2(contains(zh, "ZeRO 阶段 2 与 流水线阶段数 2 不能同时使用"), zh.c_str());
    const std::string json = e.text([](std::string_view key) { return "\"" + std::string(key) + "\""; });
    QVERIFY2(contains(json, "\"zero\" 2 with \"pp\" 2"), json.c_str());
  }

  // A model too small for the byte tokenizer is blamed on the flag that named it:
  // --model DIR/config.json (fresh weights) was reported as --init-from.
  void aSmallVocabularyNamesTheFlagThatGaveTheModel() {
    const QTemporaryDir dir;
    const std::string config = dir.path().toStdString() + "/config.json";
    std::ofstream(config) << R"({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                 "n_positions": 32})";
    RunConfig c;
    c.model = config;
    c.seq = 16;
    const FieldError e = field_error_of([&] { validate_run_config(c); });
    std::string expected = "--model: the vocabulary of ";
    expected += dir.path().toStdString();
    QVERIFY2(contains(e.what(), expected + " (100) is smaller"), e.what());
    QVERIFY2(!contains(e.what(), "--init-from"), e.what());
  }

  // Recordings: a bad value names its key, and every saved field comes back.
  void runConfigJsonUsesTheSchema() {
    RunConfig c;
    c.lr = 0.5f;
    c.precision = Precision::bf16;
    c.eval_batches = 7;
    nlohmann::json j = run_config_to_json(c);
    for (const RunField& f : run_fields()) QCOMPARE(j.contains(f.key), f.saved != Saved::never);
    QCOMPARE(run_config_from_json(j).eval_batches, 7);
    j["zero"] = 9;
    try {
      run_config_from_json(j);
      QFAIL("zero 9 was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(contains(e.what(), "key \"zero\": 9 is out of range [0, 3]"), e.what());
      QVERIFY2(!contains(e.what(), "--zero"), e.what());
    }
  }

  // The estimator shares the run's layout rules, and names a value by the
  // file and key that set it: an accelerate YAML's user never typed --accum.
  void estimatorNamesTheFileThatSetAValue() {
    QTemporaryDir dir;
    const std::string yaml = dir.path().toStdString() + "/acc.yaml";
    std::ofstream(yaml) << "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                           "  gradient_accumulation_steps: -1\n  zero_stage: 2\n";
    const ImportedSettings imported = import_settings(yaml, "");
    try {
      resolve_settings(EstimateSettings{}, imported.patches);
      QFAIL("accumulation -1 was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(contains(e.what(), "acc.yaml: deepspeed_config.gradient_accumulation_steps must be at least 1 (got -1)"),
               e.what());
      QVERIFY2(!contains(e.what(), "--accum"), e.what());
    }
    SettingsPatch flags;
    flags.axes[Axis::pp] = 2;
    flags.origin.push_back({"pp", "--pp"});
    std::vector<SettingsPatch> patches = {SettingsPatch{}, flags};
    patches[0].zero_stage = 2;
    patches[0].origin.push_back({"zero", "ds.json: zero_optimization.stage"});
    try {
      resolve_settings(EstimateSettings{}, patches);
      QFAIL("ZeRO-2 with a pipeline was accepted");
    } catch (const ConfigError& e) {
      QVERIFY2(contains(e.what(), "ds.json: zero_optimization.stage 2 with --pp 2 is refused"), e.what());
    }
  }

  // One table for every surface: the estimator's own rows are complete, each
  // surface's flags are unique, and a row read on the estimator's surfaces
  // keeps its one meaning with a planner's range (dp up to 1,000,000, not 64).
  void everySurfaceReadsTheSameRows() {
    std::set<std::string_view> keys;
    for (const RunField& f : schema_fields()) {
      QVERIFY2(keys.insert(f.key).second, f.key.data());
      QVERIFY2(f.surfaces != 0 && !f.help.en.empty() && !f.help.zh.empty(), f.key.data());
      QVERIFY2((f.get != nullptr) == f.on(surface::train), f.key.data());
    }
    // The estimator-only rows (plan_fields.cpp): 10, and the kernel model's twelve run inputs (runtime,
    // selective_ac, dropout, autocast, reduce_dtype, tp_comm_overlap, async_tp, overlap_param_gather, float8,
    // float8_all_gather, gpu_bandwidth, network_bandwidth).
    QCOMPARE(run_fields().size() + 22, schema_fields().size());
    for (const unsigned on : {surface::train, surface::estimate}) {
      std::set<std::string_view> flags;
      for (const RunField& f : fields_on(on))
        if (!f.flag.empty()) QVERIFY2(flags.insert(f.flag).second, f.flag.data());
    }
    std::set<std::string_view> planner;
    for (const RunField& f : fields_on(surface::planner)) planner.insert(f.key);
    for (const char* key : {"dp", "pp", "zero", "precision", "micro_batch", "seq", "checkpoint", "gpu_profile",
                            "gpus_per_node", "nodes", "activations", "tp", "sequence_parallel"})
      QVERIFY2(planner.count(key) == 1, key);

    const RunField& dp = run_field("dp");
    QCOMPARE(dp.max, std::int64_t{64});
    QCOMPARE(field_on(dp, surface::estimate).max, std::int64_t{1'000'000});
    QCOMPARE(field_on(dp, surface::planner).max, std::int64_t{1'000'000});
    QCOMPARE(field_value_from_text(field_on(dp, surface::estimate), "100000").get<int>(), 100000);
    QCOMPARE(std::string(field_error_of([&] { field_value_from_text(dp, "100000"); }).what()),
             std::string("--dp: 100000 is out of range [1, 64]"));
    const RunField checkpoint = field_on(run_field("checkpoint"), surface::planner);
    QCOMPARE(checkpoint.choices.size(), std::size_t{3});  // the estimator also knows selective recompute
    QCOMPARE(field_on(run_field("gpu_profile"), surface::estimate).flag, std::string_view("--gpu"));
    QCOMPARE(flag_of("micro_batch"), std::string("--micro-batch"));
    // The estimator's validation reads the same rows.
    EstimateSettings s;
    s.layout[Axis::dp] = 100000;
    validate_estimate_settings(s);
    s.layout[Axis::dp] = 1'000'001;
    QCOMPARE(std::string(field_error_of([&] { validate_estimate_settings(s); }).what()),
             std::string("--dp must be between 1 and 1000000 (got 1000001)"));
  }

  // A DeepSpeed file read for a run (`train --deepspeed`) and for the
  // estimator (`estimate --deepspeed`, the planner's import) is read once into
  // schema rows: every value the estimator takes is one the run's import set
  // from the same file key (the row's), with the same value, and the
  // estimator's settings equal those of the run it describes.
  void aDeepSpeedFileGivesTrainAndEstimateTheSameValues() {
    const std::string path = SHARDSCOPE_FIXTURES "/configs/ds_examples_zero2_fp16.json";
    const DeepSpeedConfig ds = load_deepspeed_config(path);
    RunConfig run;
    run.layout[Axis::dp] = 2;
    const RunImport imported_run = import_deepspeed_run(ds, run);
    std::vector<std::string> warnings;
    const std::vector<SchemaValue> values = plan_values_from_deepspeed(ds, warnings);
    QCOMPARE(values.size(), std::size_t{5});  // accum, train_batch_size, fp16, ZeRO stage, activation checkpointing
    for (const SchemaValue& v : values) {
      const RunField& row = run_field(v.key);
      QVERIFY2(v.from.rfind(path + ": ", 0) == 0, v.from.c_str());
      QVERIFY2(contains(std::string(row.deepspeed), v.from.substr(path.size() + 2)), v.from.c_str());
      QVERIFY2(std::find(imported_run.fields.begin(), imported_run.fields.end(), v.key) != imported_run.fields.end(),
               v.key.c_str());
      QVERIFY2(row.get(run) == v.value, (v.key + ": " + row.get(run).dump() + " vs " + v.value.dump()).c_str());
    }
    EstimateSettings base;
    base.layout[Axis::dp] = 2;
    const EstimateSettings plan = resolve_settings(base, import_settings("", path).patches);
    const EstimateSettings from_run = settings_for_run(run);
    QCOMPARE(plan.zero_stage, 2);
    QCOMPARE(plan.zero_stage, from_run.zero_stage);
    QCOMPARE(plan.precision, Precision::fp16);
    QCOMPARE(plan.precision, from_run.precision);
    QCOMPARE(plan.accum, from_run.accum);
    QCOMPARE(plan.micro_batch_size, from_run.micro_batch_size);
    QCOMPARE(plan.global_batch(), std::int64_t{run.batch});
    QCOMPARE(plan.recompute, from_run.recompute);
  }

  // A field added as one row (adam_beta2): the CLI, the metadata and the
  // optimizer see it; older recordings without it keep the default.
  void anAddedFieldReachesTheOptimizer() {
    const RunField& beta2 = run_field("adam_beta2");
    QCOMPARE(beta2.flag, std::string_view("--adam-beta2"));
    RunConfig c;
    set_field(c, beta2, field_value_from_text(beta2, "0.5"));
    QCOMPARE(c.adam_beta2, 0.5f);
    nlohmann::json old = run_config_to_json(RunConfig{});
    old.erase("adam_beta2");
    QCOMPARE(run_config_from_json(old).adam_beta2, RunConfig{}.adam_beta2);
    QVERIFY(contains(field_error_of([&] { field_value_from_text(beta2, "1"); }).what(), "--adam-beta2 must be in [0, 1)"));
    const auto losses = [](float b2) {
      RunConfig run;
      run.steps = 3;
      run.batch = 4;
      run.seq = 32;
      run.threads = 1;
      run.adam_beta2 = b2;
      std::vector<float> out;
      Trainer trainer(run);
      trainer.run([&](const StepMetrics& m) { out.push_back(m.loss); });
      return out;
    };
    const std::vector<float> a = losses(0.95f), b = losses(0.5f);
    QCOMPARE(a[0], b[0]);  // the same first forward
    QVERIFY2(a[2] != b[2], "beta2 did not change the updates");
  }
};

QTEST_GUILESS_MAIN(TestRunSchema)
#include "test_run_schema.moc"
