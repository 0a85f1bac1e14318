// SPDX-License-Identifier: GPL-3.0-or-later
// `train --deepspeed ds.json` and `train --accelerate config.yaml`
// (config/run_import.h): a file sets the same run as the equivalent flags
// (the same per-step losses), a flag overrides the file wherever it stands,
// unknown keys are warned about by name, and files the engine cannot honour
// exit 2 naming the file and the key. Every run is gpt-tiny, 2 steps.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "cli/cli_runner.h"

namespace {

const QByteArray kDeepSpeed = R"({
  "train_batch_size": 8,
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 2,
  "zero_optimization": {"stage": 2, "reduce_bucket_size": 500000},
  "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500,
           "hysteresis": 2, "min_loss_scale": 1},
  "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.05}},
  "scheduler": {"type": "WarmupCosineLR",
                "params": {"warmup_num_steps": 1, "total_num_steps": 2, "warmup_type": "linear", "cos_min_ratio": 0.1}},
  "gradient_clipping": 0.5
})";

// The flags that say what kDeepSpeed says (with --dp 2): 500000 fp16 elements = 1,000,000 bytes = 1 MB.
const QStringList kDeepSpeedFlags = {"--batch",
                                     "8",
                                     "--accum",
                                     "2",
                                     "--zero",
                                     "2",
                                     "--bucket-mb",
                                     "1",
                                     "--precision",
                                     "fp16",
                                     "--loss-scaler",
                                     "deepspeed",
                                     "--initial-scale-power",
                                     "12",
                                     "--scale-window",
                                     "500",
                                     "--hysteresis",
                                     "2",
                                     "--min-loss-scale",
                                     "1",
                                     "--lr",
                                     "3e-4",
                                     "--adam-beta2",
                                     "0.95",
                                     "--weight-decay",
                                     "0.05",
                                     "--warmup",
                                     "1",
                                     "--steps",
                                     "2",
                                     "--min-lr-ratio",
                                     "0.1",
                                     "--grad-clip",
                                     "0.5"};

const QStringList kTiny = {"train", "--model", "gpt-tiny", "--seq", "16", "--steps", "2", "--threads", "1",
                           "--log-every", "1"};

struct Step {
  double loss, lr, scale;
};

QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) qFatal("cannot write %s", qPrintable(path));
  return path;
}

// Runs train with `args` and --metrics-out; the per-step loss, lr and loss scale.
std::vector<Step> run_steps(const QTemporaryDir& dir, const QStringList& args, CliResult* result = nullptr) {
  static int n = 0;
  const QString metrics = dir.filePath(QString("m%1.jsonl").arg(++n));
  const CliResult r = run_cli(kTiny + args + QStringList{"--metrics-out", metrics});
  if (result) *result = r;
  if (r.code != 0) qWarning("%s", qPrintable(r.err));
  std::vector<Step> steps;
  QFile f(metrics);
  if (!f.open(QIODevice::ReadOnly)) return steps;
  for (const QByteArray& line : f.readAll().split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    steps.push_back({o["loss"].toDouble(), o["lr"].toDouble(), o["loss_scale"].toDouble()});
  }
  return steps;
}

void compare(const std::vector<Step>& a, const std::vector<Step>& b) {
  QCOMPARE(a.size(), std::size_t{2});
  QCOMPARE(b.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    QVERIFY2(a[i].loss == b[i].loss, qPrintable(QString("step %1: loss %2 vs %3").arg(i + 1).arg(a[i].loss).arg(b[i].loss)));
    QCOMPARE(a[i].lr, b[i].lr);
    QCOMPARE(a[i].scale, b[i].scale);
  }
}

}  // namespace

class TestTrainConfigs : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void deepspeed_matches_flags() {
    QTemporaryDir dir;
    const QString ds = write(dir, "ds.json", kDeepSpeed);
    CliResult r;
    const auto from_file = run_steps(dir, {"--dp", "2", "--deepspeed", ds}, &r);
    QVERIFY2(r.out.contains("from " + ds + ": batch 8 = micro 2 x accum 2 x dp 2, ZeRO-2"), qPrintable(r.out));
    QVERIFY2(r.out.contains("fp16 (deepspeed scaler, initial scale 2^12)") && r.out.contains("grad clip 0.5"),
             qPrintable(r.out));
    const auto from_flags = run_steps(dir, QStringList{"--dp", "2"} + kDeepSpeedFlags);
    compare(from_file, from_flags);
    QCOMPARE(from_file[0].scale, 4096.0);
  }

  void accelerate_matches_flags() {
    QTemporaryDir dir;
    write(dir, "plugin.json", R"({"train_batch_size": 8, "gradient_accumulation_steps": 2, "bf16": {"enabled": true},
        "gradient_clipping": 2.0, "scheduler": {"type": "WarmupLR",
        "params": {"warmup_max_lr": 0.002, "warmup_num_steps": 1, "warmup_type": "linear"}}})");
    const QString yaml = write(dir, "accelerate.yaml",
                               "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_machines: 1\n"
                               "num_processes: 2\nmixed_precision: bf16\ndeepspeed_config:\n"
                               "  deepspeed_config_file: plugin.json\n  zero_stage: 1\n  gradient_clipping: 0.25\n");
    CliResult r;
    const auto from_file = run_steps(dir, {"--accelerate", yaml}, &r);
    QVERIFY2(r.out.contains("from " + yaml + ": DEEPSPEED, 2 processes (dp 2"), qPrintable(r.out));
    QVERIFY2(r.out.contains("batch 8 = micro 2 x accum 2 x dp 2"), qPrintable(r.out));
    const auto from_flags = run_steps(dir, {"--dp", "2", "--batch", "8", "--accum", "2", "--precision", "bf16",
                                            "--zero", "1", "--grad-clip", "0.25", "--lr", "0.002", "--warmup", "1",
                                            "--min-lr-ratio", "1"});
    compare(from_file, from_flags);
    QVERIFY(from_file[1].lr == from_file[0].lr);  // WarmupLR: constant after the warm-up
  }

  void accelerate_multi_gpu_inline() {
    QTemporaryDir dir;
    const QString yaml = write(dir, "multi.yaml", "distributed_type: MULTI_GPU\nnum_processes: 4\nnum_machines: 2\n"
                                                  "mixed_precision: fp16\n");
    CliResult r;
    const auto from_file = run_steps(dir, {"--accelerate", yaml, "--batch", "8"}, &r);
    QVERIFY2(r.out.contains("4 processes on 2 machines (dp 4"), qPrintable(r.out));
    QVERIFY2(r.out.contains("fp16 (torch scaler)"), qPrintable(r.out));
    compare(from_file, run_steps(dir, {"--dp", "4", "--batch", "8", "--precision", "fp16"}));
  }

  void flag_overrides_file() {
    QTemporaryDir dir;
    const QString ds = write(dir, "ds.json", kDeepSpeed);
    CliResult r;
    // Before and after the file on the command line: the flag wins either way.
    const auto steps = run_steps(dir, {"--lr", "1e-3", "--dp", "2", "--deepspeed", ds, "--zero", "1"}, &r);
    QCOMPARE(steps.size(), std::size_t{2});
    QCOMPARE(static_cast<float>(steps[0].lr), 1e-3f);  // warm-up 1: the first step runs at the peak
    QVERIFY2(r.out.contains("dp 2 ddp ZeRO-1"), qPrintable(r.out));
    QVERIFY2(r.out.contains("overridden by --zero, --lr"), qPrintable(r.out));
  }

  // A Hugging Face Trainer config ("auto" everywhere, bucket sizes as reals) runs; the autos are warnings.
  void hf_trainer_autos() {
    QTemporaryDir dir;
    const QString ds = write(dir, "hf.json", R"({"fp16": {"enabled": "auto", "loss_scale": 0},
      "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
      "zero_optimization": {"stage": 1, "reduce_bucket_size": 2e5},
      "gradient_accumulation_steps": "auto", "gradient_clipping": "auto", "train_batch_size": "auto"})");
    CliResult r;
    const auto steps = run_steps(dir, {"--deepspeed", ds, "--batch", "4"}, &r);
    QCOMPARE(r.code, 0);
    QCOMPARE(steps.size(), std::size_t{2});
    QVERIFY2(r.err.contains("train_batch_size: \"auto\""), qPrintable(r.err));
    // 2e5 fp32 elements: 800,000 bytes, 0.762939 MiB (--bucket-mb counts MiB, as PyTorch's bucket_cap_mb)
    QVERIFY2(r.out.contains("ZeRO-1, bucket 0.762939 MiB"), qPrintable(r.out));
    QCOMPARE(steps[1].lr, steps[0].lr);  // an optimizer block without a scheduler: DeepSpeed keeps the lr constant
    QVERIFY2(r.out.contains("constant lr (no scheduler)"), qPrintable(r.out));
  }

  void unknown_key_warns() {
    QTemporaryDir dir;
    QByteArray text = kDeepSpeed;
    text.replace("\"gradient_clipping\"", "\"gradient_clipping_typo\": 1, \"gradient_clipping\"");
    text.replace("\"weight_decay\": 0.05", "\"weight_decay\": 0.05, \"momentum_x\": 0.5");
    CliResult r;
    const auto steps = run_steps(dir, {"--dp", "2", "--deepspeed", write(dir, "typo.json", text)}, &r);
    QCOMPARE(r.code, 0);
    QCOMPARE(steps.size(), std::size_t{2});
    QVERIFY2(r.err.contains("gradient_clipping_typo") && r.err.contains("unknown key"), qPrintable(r.err));
    QVERIFY2(r.err.contains("momentum_x"), qPrintable(r.err));
  }

  // The shipped fixtures: accelerate's YAML points to a ZeRO-2 JSON whose batch needs dp 8, whose
  // offload and WarmupDecayLR the engine cannot follow. The first refusal names its file and key.
  void fixtures_refused() {
    const QString yaml = SHARDSCOPE_FIXTURES "/configs/accelerate_deepspeed.yaml";
    CliResult r = run_cli(kTiny + QStringList{"--accelerate", yaml});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("ds_zero2_offload.json: zero_optimization.offload_optimizer"), qPrintable(r.err));
    r = run_cli(kTiny + QStringList{"--deepspeed", SHARDSCOPE_FIXTURES "/configs/ds_zero2_offload.json", "--dp", "2"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("ds_zero2_offload.json: train_batch_size: 256 is not"), qPrintable(r.err));
  }

  // The DeepSpeed examples' ZeRO-2 and ZeRO-3 fp16 configs (Megatron-LM's scripts/ds_zero{2,3}_config.json
  // keys): they run, print what they set, and train as the same settings given as flags.
  void deepspeed_examples_run_data() {
    QTest::addColumn<QString>("stage");
    QTest::newRow("zero2") << "2";
    QTest::newRow("zero3") << "3";
  }
  void deepspeed_examples_run() {
    QFETCH(QString, stage);
    QTemporaryDir dir;
    const QString ds = SHARDSCOPE_FIXTURES "/configs/ds_examples_zero" + stage + "_fp16.json";
    CliResult r;
    const auto from_file = run_steps(dir, {"--dp", "2", "--deepspeed", ds}, &r);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("batch 16 = micro 8 x accum 1 x dp 2, ZeRO-" + stage +
                            ", checkpointing, fp16 (deepspeed scaler, initial scale 2^16)"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("constant lr (no scheduler), lr 0.00015, grad clip 1"), qPrintable(r.out));
    QVERIFY2(r.err.contains("partition_activations: no effect here"), qPrintable(r.err));
    const auto from_flags =
        run_steps(dir, {"--dp", "2", "--batch", "16", "--zero", stage, "--checkpoint", "full", "--precision", "fp16",
                        "--loss-scaler", "deepspeed", "--scale-window", "1000", "--hysteresis", "2",
                        "--min-loss-scale", "1", "--lr", "0.00015", "--warmup", "0", "--min-lr-ratio", "1",
                        "--grad-clip", "1"});
    compare(from_file, from_flags);
    QCOMPARE(from_file[0].scale, 65536.0);
  }

  void bad_files_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("key");
    QTest::newRow("batch arithmetic") << "batch.json"
        << QByteArray(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2})")
        << "train_batch_size";
    QTest::newRow("offload") << "offload.json"
        << QByteArray(R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})")
        << "zero_optimization.offload_optimizer";
    QTest::newRow("scheduler OneCycle") << "onecycle.json"
        << QByteArray(R"({"scheduler": {"type": "OneCycle", "params": {}}})") << "scheduler.type";
    QTest::newRow("scheduler WarmupDecayLR") << "decay.json"
        << QByteArray(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 2}}})") << "scheduler.type";
    QTest::newRow("warmup log") << "log.json"
        << QByteArray(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_type": "log"}}})") << "warmup_type";
    QTest::newRow("optimizer Lamb") << "lamb.json"
        << QByteArray(R"({"optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}})") << "optimizer.type";
    QTest::newRow("eps") << "eps.json"
        << QByteArray(R"({"optimizer": {"type": "Adam", "params": {"eps": 1e-6}}})") << "optimizer.params.eps";
    QTest::newRow("beta1") << "beta1.json"
        << QByteArray(R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.8, 0.99]}}})") << "betas";
    QTest::newRow("prescale_gradients") << "prescale.json" << QByteArray(R"({"prescale_gradients": true})")
        << "prescale_gradients";
    QTest::newRow("fp16 master weights") << "master.json"
        << QByteArray(R"({"fp16": {"enabled": true, "fp16_master_weights_and_grads": true}})")
        << "fp16.fp16_master_weights_and_grads";
    QTest::newRow("malformed JSON") << "broken.json" << QByteArray("{\"train_batch_size\": 8,\n  \"fp16\": {") << "line";
    QTest::newRow("repeated key") << "twice.json"
        << QByteArray("{\"train_micro_batch_size_per_gpu\": 4,\n \"train_micro_batch_size_per_gpu\": 8}")
        << "line 2, column 2: key 'train_micro_batch_size_per_gpu' appears twice";
    QTest::newRow("negative clipping") << "clip.json" << QByteArray(R"({"gradient_clipping": -1})")
        << "gradient_clipping";
    QTest::newRow("negative lr") << "lr.json" << QByteArray(R"({"optimizer": {"type": "AdamW", "params": {"lr": -0.1}}})")
        << "optimizer.params.lr";
    QTest::newRow("yaml: missing deepspeed file") << "missing.yaml"
        << QByteArray("distributed_type: DEEPSPEED\nnum_processes: 1\ndeepspeed_config:\n  deepspeed_config_file: nope.json\n")
        << "deepspeed_config_file";
    QTest::newRow("yaml: FSDP") << "fsdp.yaml" << QByteArray("distributed_type: FSDP\nnum_processes: 2\n")
        << "distributed_type";
    QTest::newRow("yaml: fp8") << "fp8.yaml" << QByteArray("distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: fp8\n")
        << "mixed_precision";
    QTest::newRow("yaml: offload") << "off.yaml"
        << QByteArray("distributed_type: DEEPSPEED\nnum_processes: 1\ndeepspeed_config:\n  offload_optimizer_device: cpu\n")
        << "offload_optimizer_device";
    QTest::newRow("yaml: repeated key") << "twice.yaml"
        << QByteArray("distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\nnum_processes: 4\n")
        << "line 4: key 'num_processes' appears twice";
    QTest::newRow("yaml: negative processes") << "neg.yaml" << QByteArray("distributed_type: MULTI_GPU\nnum_processes: -3\n")
        << "num_processes";
  }

  void bad_files() {
    QFETCH(QString, name);
    QFETCH(QByteArray, text);
    QFETCH(QString, key);
    QTemporaryDir dir;
    const QString path = write(dir, name, text);
    const QString flag = name.endsWith(".yaml") ? "--accelerate" : "--deepspeed";
    const CliResult r = run_cli(kTiny + QStringList{flag, path});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(name) && r.err.contains(key), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestTrainConfigs)
#include "test_train_configs.moc"
