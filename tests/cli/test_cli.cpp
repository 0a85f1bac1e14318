// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli as a user runs it: bad input gets a clear message and exit
// code 2, never a crash; a short run writes the documented JSONL schema.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "cli/cli_runner.h"
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include "config/run_schema.h"
#include "events/recording.h"
#include "ops/device.h"

class TestCli : public QObject {
  Q_OBJECT

  using Result = CliResult;
  static Result run(const QStringList& args) { return run_cli(args); }

 private Q_SLOTS:
  void bad_input_exits_2_with_a_message_data();
  void bad_input_exits_2_with_a_message();
  void typos_get_a_did_you_mean();
  void help_documents_every_flag();
  void short_run_writes_metrics_jsonl();
  void diverged_run_stops_naming_the_step();
  void cuda_without_a_gpu_says_so_and_uses_the_cpu();
  void fp16_run_reports_loss_scale_and_overflow();
  void export_writes_a_chrome_trace_atomically();
  void export_bad_input_exits_2();
  void estimate_bad_input_exits_2();
  void estimate_json_has_the_documented_keys();
  void estimate_help_documents_every_flag();
  void estimate_flags_are_the_schemas_rows();
  void a_row_has_a_range_per_surface();
  void tokenize_prints_the_tokenizers_library_ids();

 private:
  QTemporaryDir dir_;
};

void TestCli::bad_input_exits_2_with_a_message_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("message");
  QTest::newRow("unknown preset") << QStringList{"train", "--model", "gpt-huge"} << "unknown model preset 'gpt-huge'";
  QTest::newRow("missing data") << QStringList{"train", "--data", "/no/such/file.txt"}
                                << "cannot open '/no/such/file.txt'";
  QTest::newRow("empty data") << QStringList{"train", "--data", "@EMPTY@"} << "is empty";
  QTest::newRow("non-numeric steps") << QStringList{"train", "--steps", "ten"} << "--steps: 'ten' is not an integer";
  QTest::newRow("trailing junk") << QStringList{"train", "--batch", "8x"} << "--batch: '8x' is not an integer";
  QTest::newRow("zero steps") << QStringList{"train", "--steps", "0"} << "--steps: 0 is out of range";
  QTest::newRow("negative batch") << QStringList{"train", "--batch", "-4"} << "--batch: -4 is out of range";
  QTest::newRow("nan lr") << QStringList{"train", "--lr", "nan"} << "--lr: nan is not a finite number";
  QTest::newRow("negative lr") << QStringList{"train", "--lr", "-0.1"} << "--lr must be in (0, 10)";
  QTest::newRow("lr under a float") << QStringList{"train", "--lr", "1e-50"}
                                    << "--lr: 1e-50 is too small for a 32-bit float (it would be 0)";
  QTest::newRow("seq too long") << QStringList{"train", "--seq", "257"}
                                << "--seq 257 exceeds the maximum sequence length of gpt-tiny (256)";
  QTest::newRow("unknown flag") << QStringList{"train", "--stepz", "3"} << "unknown flag '--stepz'";
  QTest::newRow("bad device") << QStringList{"train", "--device", "tpu"} << "--device: 'tpu' is not one of cpu, cuda";
  QTest::newRow("bad gpu list") << QStringList{"train", "--device", "cuda", "--gpus", "0,x"}
                                << "--gpus: 'x' is not an integer";
  QTest::newRow("gpu count neither 1 nor the world size")
      << QStringList{"train", "--device", "cuda", "--dp", "4", "--gpus", "0,1"}
      << "--gpus lists 2 GPUs for 4 ranks (dp x pp): list one GPU for every rank";
  QTest::newRow("gpu count names the tp axis")
      << QStringList{"train", "--device", "cuda", "--dp", "2", "--tp", "2", "--gpus", "0,1"}
      << "--gpus lists 2 GPUs for 4 ranks (dp x pp x tp): list one GPU for every rank";
  QTest::newRow("a gpu listed twice") << QStringList{"train", "--device", "cuda", "--dp", "2", "--gpus", "0,0"}
                                      << "--gpus lists a GPU twice";
  QTest::newRow("bad precision") << QStringList{"train", "--precision", "fp8"}
                                 << "--precision: 'fp8' is not one of fp32, fp16, bf16";
  QTest::newRow("bad loss scaler") << QStringList{"train", "--precision", "fp16", "--loss-scaler", "apex"}
                                   << "--loss-scaler: 'apex' is not one of torch, deepspeed";
  QTest::newRow("scale flags without fp16")
      << QStringList{"train", "--precision", "bf16", "--loss-scale", "128"} << "apply to --precision fp16 only";
  QTest::newRow("hysteresis with torch rules") << QStringList{"train", "--precision", "fp16", "--hysteresis", "2"}
                                               << "--hysteresis is a DeepSpeed rule: add --loss-scaler deepspeed";
  QTest::newRow("loss scaler without fp16")
      << QStringList{"train", "--precision", "bf16", "--loss-scaler", "deepspeed"} << "apply to --precision fp16 only";
  QTest::newRow("static scale with dynamic knobs")
      << QStringList{"train", "--precision", "fp16", "--loss-scale", "128", "--scale-window", "10"}
      << "--loss-scale sets a static scale";
  QTest::newRow("zero min scale") << QStringList{"train",     "--precision",      "fp16", "--loss-scaler",
                                                 "deepspeed", "--min-loss-scale", "0"}
                                  << "--min-loss-scale must be positive";
  QTest::newRow("scale power too big") << QStringList{"train", "--precision", "fp16", "--initial-scale-power", "128"}
                                       << "--initial-scale-power: 128 is out of range";
  QTest::newRow("overflow injection needs fp16")
      << QStringList{"train", "--inject-overflow", "0:1"} << "--inject-overflow needs --precision fp16";
  QTest::newRow("missing value") << QStringList{"train", "--steps"} << "--steps needs a value";
  QTest::newRow("unknown command") << QStringList{"trian"} << "unknown command 'trian'";
  QTest::newRow("tokenize without a tokenizer") << QStringList{"tokenize", "--text", "hi"}
                                               << "--tokenizer PATH is required";
  QTest::newRow("tokenize without a text") << QStringList{"tokenize", "--tokenizer", "/no/such/dir"}
                                           << "--text TEXT is required";
  QTest::newRow("tokenize with a missing tokenizer") << QStringList{"tokenize", "--tokenizer", "/no/such/tokenizer.json",
                                                                    "--text", "hi"}
                                                     << "tokenizer: cannot open '/no/such/tokenizer.json'";
  QTest::newRow("tokenize a damaged tokenizer") << QStringList{"tokenize", "--tokenizer", "@EMPTY@", "--text", "hi"}
                                                << "is an empty file";
  QTest::newRow("unwritable metrics") << QStringList{"train", "--steps", "1", "--metrics-out", "/no/dir/m.jsonl"}
                                      << "--metrics-out: cannot write";
}

void TestCli::bad_input_exits_2_with_a_message() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  const QString empty = dir_.path() + "/empty.txt";
  QFile(empty).open(QIODevice::WriteOnly);
  args.replaceInStrings("@EMPTY@", empty);
  const Result r = run(args);
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains(message), qPrintable("stderr was: " + r.err));
}

// A flag, preset, lesson or command a typo away from a known one is named in
// the error; a name far from all of them gets no guess.
void TestCli::typos_get_a_did_you_mean() {
  const struct {
    QStringList args;
    QString message;
  } cases[] = {
      {{"train", "--step", "3"}, "unknown flag '--step'; did you mean '--steps'? (see shardscope-cli train --help)"},
      {{"train", "--bucket-mbs=1"}, "unknown flag '--bucket-mbs'; did you mean '--bucket-mb'?"},
      {{"estimate", "--gpu-memory", "80GB"}, "unknown flag '--gpu-memory'; did you mean '--gpu-mem'?"},
      {{"train", "--model", "gpt_tiny"}, "unknown model preset 'gpt_tiny'; did you mean 'gpt-tiny'?"},
      {{"estimate", "--model", "bert-bse"}, "unknown model preset 'bert-bse'; did you mean 'bert-base'?"},
      {{"estimate", "--gpu", "a100-80g"}, "unknown GPU profile 'a100-80g'; did you mean 'A100-80GB'?"},
      {{"train", "--lesson", "pipeline_bubble"},
       "--lesson: no lesson 'pipeline_bubble'; did you mean 'pipeline_bubbles'? (the lessons are "},
      {{"trian"}, "unknown command 'trian'; did you mean 'train'?"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + " -> stderr: " + r.err));
  }
  for (const QStringList& far :
       {QStringList{"train", "--learning-rate", "1"}, QStringList{"train", "--model", "gpt-huge"},
        QStringList{"train", "--lesson", "quantization"}}) {
    const Result r = run(far);
    QCOMPARE(r.code, 2);
    QVERIFY2(!r.err.contains("did you mean"), qPrintable(far.join(' ') + " -> stderr: " + r.err));
  }
}

void TestCli::help_documents_every_flag() {
  const Result r = run({"train", "--help"});
  QCOMPARE(r.code, 0);
  for (const char* flag : {"--model", "--steps", "--batch", "--seq", "--lr", "--seed", "--data", "--eval-every",
                           "--metrics-out", "--threads", "--warmup", "--weight-decay", "--grad-clip"})
    QVERIFY2(r.out.contains(flag), flag);
  QVERIFY(r.out.contains("gpt2-124m"));  // the presets are listed
}

void TestCli::short_run_writes_metrics_jsonl() {
  const QString metrics = dir_.path() + "/m.jsonl";
  const Result r = run({"train", "--model", "gpt-tiny", "--steps", "4", "--batch", "4", "--seq", "32", "--eval-every",
                        "2", "--metrics-out", metrics});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY(r.out.contains("step      4/4"));
  QFile f(metrics);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 4);
  for (int i = 0; i < lines.size(); ++i) {
    const QJsonObject o = QJsonDocument::fromJson(lines[i]).object();
    QCOMPARE(o["step"].toInt(), i + 1);
    for (const char* key : {"loss", "lr", "grad_norm", "tokens_per_s", "step_time_s"})
      QVERIFY2(o[key].isDouble() && o[key].toDouble() >= 0.0, key);
    QCOMPARE(o["eval_loss"].isDouble(), (i + 1) % 2 == 0);
    const QJsonObject memory = o["memory"].toObject();
    for (const char* category :
         {"parameters", "gradients", "optimizer_states", "activations", "communication", "workspace"})
      QVERIFY2(memory.contains(category), category);
    QCOMPARE(memory["parameters"].toDouble(), 4.0 * 859392);  // gpt-tiny: 859,392 parameters
    QCOMPARE(memory["optimizer_states"].toDouble(), 8.0 * 859392);
    QCOMPARE(o["loss_scale"].toDouble(), 1.0);  // fp32: no loss scaling
    QCOMPARE(o["skipped"].toBool(), false);
  }
}

// fp32 has no loss scaler to skip a step whose gradients are not finite: the
// run stops there (exit 1) naming the step, and keeps the metrics of the steps before.
void TestCli::diverged_run_stops_naming_the_step() {
  const QString metrics = dir_.path() + "/diverged.jsonl";
  const Result r = run({"train", "--model", "gpt-tiny", "--steps", "4", "--batch", "4", "--seq", "32", "--weight-decay",
                        "1e30", "--metrics-out", metrics});
  QCOMPARE(r.code, 1);
  QVERIFY2(r.err.contains("step 2: the loss is") && r.err.contains("training diverged") &&
               !r.err.contains("internal error"),
           qPrintable(r.err));
  QVERIFY2(!r.out.contains("step      2/4"), qPrintable(r.out));
  QFile f(metrics);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(f.readAll().trimmed().split('\n').size(), 1);
}

// fp16: 16-bit parameters and gradients (2 + 2 bytes), fp32 master + Adam (12);
// the loss scale in every line, and an injected overflow skips its step and halves it.
void TestCli::fp16_run_reports_loss_scale_and_overflow() {
  const QString metrics = dir_.path() + "/fp16.jsonl";
  const Result r = run({"train", "--model", "gpt-tiny", "--steps", "3", "--batch", "4", "--seq", "32", "--precision",
                        "fp16", "--initial-scale-power", "10", "--inject-overflow", "0:2", "--metrics-out", metrics});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("overflow: step skipped"), qPrintable(r.out));
  QFile f(metrics);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 3);
  const double scales[] = {1024, 1024, 512};
  for (int i = 0; i < 3; ++i) {
    const QJsonObject o = QJsonDocument::fromJson(lines[i]).object();
    QCOMPARE(o["loss_scale"].toDouble(), scales[i]);
    QCOMPARE(o["skipped"].toBool(), i == 1);
    const QJsonObject memory = o["memory"].toObject();
    QCOMPARE(memory["parameters"].toDouble(), 2.0 * 859392);
    QCOMPARE(memory["gradients"].toDouble(), 2.0 * 859392);
    QCOMPARE(memory["optimizer_states"].toDouble(), 12.0 * 859392);
  }
}

// --device cuda: on a GPU the backend is named cuda:N; without one the run
// says why once and trains on the CPU.
void TestCli::cuda_without_a_gpu_says_so_and_uses_the_cpu() {
  const Result r =
      run({"train", "--model", "gpt-tiny", "--steps", "2", "--batch", "4", "--seq", "32", "--device", "cuda"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  const shardscope::DeviceProbe probe = shardscope::probe_cuda();
  if (probe.available()) {
    QVERIFY2(r.out.contains("backend cuda:0"), qPrintable(r.out));
    QVERIFY(!r.out.contains("training on the CPU instead"));
  } else {
    QCOMPARE(r.out.count("note: --device cuda: "), 1);
    QVERIFY2(r.out.contains(QString::fromStdString(probe.reason) + "; training on the CPU instead"), qPrintable(r.out));
    QVERIFY(r.out.contains("backend cpu"));
  }
  QVERIFY(r.out.contains("step      2/2"));
  // Two ranks sharing GPU 0 (or, without one, two CPU ranks).
  const Result shared = run({"train", "--model", "gpt-tiny", "--steps", "2", "--batch", "4", "--seq", "32", "--device",
                             "cuda", "--dp", "2", "--gpus", "0"});
  QVERIFY2(shared.code == 0, qPrintable(shared.err));
  QVERIFY(shared.out.contains("step      2/2"));
  QCOMPARE(shared.out.count("note: --device cuda: "), probe.available() ? 0 : 1);
  // One rank per GPU (NCCL): without GPUs, the same single note and CPU ranks.
  if (!probe.available()) {
    const Result nccl = run({"train", "--model", "gpt-tiny", "--steps", "1", "--batch", "4", "--seq", "32", "--device",
                             "cuda", "--dp", "2", "--gpus", "0,1"});
    QVERIFY2(nccl.code == 0, qPrintable(nccl.err));
    QCOMPARE(nccl.out.count("note: --device cuda: "), 1);
    QVERIFY(nccl.out.contains("backend cpu"));
  }
}

// A recording written here through the engine, exported by the CLI.
void TestCli::export_writes_a_chrome_trace_atomically() {
  const std::string recording = (dir_.path() + "/export.ssrun").toStdString();
  {
    shardscope::RecordingWriter writer(recording, R"({"model":"gpt-tiny"})");
    shardscope::Event e;
    e.kind = shardscope::EventKind::compute_span;
    e.start_ns = 1'000'000;
    e.end_ns = 3'000'000;
    writer.emit(e);
    e.kind = shardscope::EventKind::comm_span;
    e.rank = 1;
    e.start_ns = 3'000'000;
    e.end_ns = 501'000'000;
    writer.emit(e);
    e.kind = shardscope::EventKind::log;
    e.set_text("done");
    writer.emit(e);
  }
  const QString trace = dir_.path() + "/trace.json";
  QFile old(trace);
  QVERIFY(old.open(QIODevice::WriteOnly));
  old.write("old contents");
  old.close();
  const Result r = run({"export", "--chrome-trace", trace, QString::fromStdString(recording)});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("exported 3 events, 2 ranks, 0.500 s"), qPrintable(r.out));
  QFile f(trace);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
  QVERIFY(doc["traceEvents"].isArray());
  QVERIFY(doc["traceEvents"].toArray().size() > 3);
  QVERIFY(!QFile::exists(trace + ".tmp"));
}

void TestCli::export_bad_input_exits_2() {
  const QString text = dir_.path() + "/not_a_run.txt";
  QFile t(text);
  QVERIFY(t.open(QIODevice::WriteOnly));
  t.write("hello, this is text\n");
  t.close();
  const QString good = dir_.path() + "/good.ssrun";
  { shardscope::RecordingWriter writer(good.toStdString(), "{}"); }
  const QString existing = dir_.path() + "/keep.json";
  QFile k(existing);
  QVERIFY(k.open(QIODevice::WriteOnly));
  k.write("keep me");
  k.close();
  const QString directory = dir_.path() + "/a_directory";
  QVERIFY(QDir().mkpath(directory));

  const struct {
    QStringList args;
    QString message;
  } cases[] = {
      {{"export", "--chrome-trace", existing, "/no/such/run.ssrun"}, "/no/such/run.ssrun: cannot open the recording"},
      {{"export", "--chrome-trace", existing, text}, "byte 0: not a ShardScope recording"},
      {{"export", good}, "--chrome-trace FILE is required"},
      {{"export", "--chrome-trace", existing}, "missing RUN.ssrun"},
      {{"export", "--chrome-trace", "/no/dir/t.json", good}, "--chrome-trace: cannot write '/no/dir/t.json'"},
      {{"export", "--chrome-trace", directory, good}, "--chrome-trace: cannot replace"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + " -> stderr: " + r.err));
  }
  QFile kept(existing);  // a failed export leaves an existing file alone
  QVERIFY(kept.open(QIODevice::ReadOnly));
  QCOMPARE(kept.readAll(), QByteArray("keep me"));
  QVERIFY(!QFile::exists(directory + ".tmp"));
}

// estimate: every kind of bad file or flag gets exit code 2 and a message naming the file, line or flag.
void TestCli::estimate_bad_input_exits_2() {
  auto write = [&](const QString& name, const QByteArray& text) {
    QFile f(dir_.path() + "/" + name);
    if (f.open(QIODevice::WriteOnly)) f.write(text);
    return f.fileName();
  };
  const QString bad_json = write("bad_config.json", "{\n  \"model_type\": \"gpt2\",\n  \"n_embd\": 768,,\n}\n");
  const QString bad_ds = write("bad_ds.json", "{\n  \"zero_optimization\": {\n    \"stage\": 7\n  }\n}\n");
  const QString bad_yaml = write("bad_acc.yaml", "distributed_type: MULTI_GPU\nnum_processes: eight\n");
  const QString broken_yaml = write("broken_acc.yaml", "distributed_type: [MULTI_GPU\n");
  const QString llama = QString(SHARDSCOPE_FIXTURES) + "/configs/llama-2-7b_config.json";
  const struct {
    QStringList args;
    QString message;
  } cases[] = {
      {{"estimate", "--model", "gpt-huge"}, "unknown model preset 'gpt-huge'"},
      {{"estimate", "--model", "/no/such/config.json"}, "--model: cannot open '/no/such/config.json'"},
      {{"estimate", "--model", bad_json}, "bad_config.json: line 3, column"},
      {{"estimate", "--deepspeed", bad_ds}, "bad_ds.json line 3: zero_optimization.stage: 7 is out of range"},
      {{"estimate", "--accelerate", bad_yaml}, "bad_acc.yaml line 2: num_processes: expected an integer, got 'eight'"},
      {{"estimate", "--accelerate", broken_yaml}, "broken_acc.yaml: line"},
      {{"estimate", "--gpu", "V100"}, "--gpu: unknown GPU profile 'V100'"},
      {{"estimate", "--gpu-mem", "lots"}, "--gpu-mem: 'lots' is not a memory size"},
      {{"estimate", "--zero", "4"}, "--zero: 4 is out of range"},
      {{"estimate", "--dp", "two"}, "--dp: 'two' is not an integer"},
      {{"estimate", "--checkpoint", "some"}, "--checkpoint: 'some' is not one of none, selective, full"},
      {{"estimate", "--model", llama, "--activations", "shardscope"}, "--activations shardscope"},
      {{"estimate", "--seq", "4096"}, "--seq 4096 exceeds the maximum sequence length of gpt-tiny (256)"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + " -> stderr: " + r.err));
  }
}

// The --json document: ranks with bytes and formulas keyed by the ledger's category names (README.md).
void TestCli::estimate_json_has_the_documented_keys() {
  const QString configs = QString(SHARDSCOPE_FIXTURES) + "/configs/";
  const Result r = run({"estimate", "--model", configs + "gpt2_config.json", "--accelerate",
                        configs + "accelerate_deepspeed.yaml", "--gpu", "A100-80GB", "--seq", "1024", "--json"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QJsonParseError error;
  const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8(), &error).object();
  QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
  const QStringList categories{"parameters",  "gradients",     "optimizer_states",
                               "activations", "communication", "workspace"};
  for (const char* key : {"schema", "model", "settings", "engine_exact", "basis", "ranks", "total_bytes", "fits",
                          "capacity_bytes", "margin_bytes", "summary", "levers", "time", "warnings", "gpu"})
    QVERIFY2(o.contains(key), key);
  QCOMPARE(o["ranks"].toArray().size(), 8);  // num_processes: 8
  for (const auto& value : o["ranks"].toArray()) {
    const QJsonObject rank = value.toObject();
    QCOMPARE(rank["bytes"].toObject().keys().size(), categories.size());
    for (const QString& c : categories) {
      QVERIFY2(rank["bytes"].toObject()[c].isDouble(), qPrintable(c));
      QVERIFY2(rank["formulas"].toObject()[c].isString(), qPrintable(c));
    }
    QVERIFY(rank["total_bytes"].toDouble() > 0);
  }
  QCOMPARE(o["model"].toObject()["parameters"].toDouble(), 124439808.0);
  QCOMPARE(o["settings"].toObject()["zero_stage"].toInt(), 2);  // from the DeepSpeed file accelerate names
  QVERIFY(o["fits"].isBool());
  const QJsonObject time = o["time"].toObject();
  for (const char* key : {"flops_per_step", "flops_formula", "dp_bytes_per_rank", "bubble_fraction", "step_time_s",
                          "tokens_per_s", "model_only"})
    QVERIFY2(time.contains(key), key);
}

void TestCli::estimate_help_documents_every_flag() {
  const Result r = run({"estimate", "--help"});
  QCOMPARE(r.code, 0);
  for (const char* flag : {"--model", "--deepspeed", "--accelerate", "--dp", "--pp", "--zero", "--precision",
                           "--micro-batch", "--seq", "--accum", "--micro-batches", "--checkpoint", "--gpu", "--gpu-mem",
                           "--activations", "--json", "--deepspeed-conventions"})
    QVERIFY2(r.out.contains(flag), flag);
  QVERIFY(r.out.contains("H200") && r.out.contains("RTX4090"));
}

// estimate's flags are the run-config schema's rows on the estimate surface
// (config/run_schema.h): --help lists every one, with its value name and help.
void TestCli::estimate_flags_are_the_schemas_rows() {
  const Result r = run({"estimate", "--help"});
  QCOMPARE(r.code, 0);
  const std::vector<shardscope::RunField> rows = shardscope::fields_on(shardscope::surface::estimate);
  QVERIFY(rows.size() >= 20);
  for (const shardscope::RunField& row : rows) {
    QVERIFY2(!row.flag.empty(), row.key.data());
    std::string head = "  ";  // built in steps: GCC 12 warns falsely (-Wrestrict) on " " + std::string(...)
    head += row.flag;
    if (row.kind != shardscope::FieldKind::toggle) head.append(" ").append(row.value_name);
    head += "\n";
    QVERIFY2(r.out.contains(QString::fromStdString(head)), head.c_str());
    const std::string first_words(row.help.en.substr(0, row.help.en.find('\n')));
    QVERIFY2(r.out.contains(QString::fromStdString(first_words)), first_words.c_str());
  }
  QVERIFY2(r.out.contains("  --dp N\n      Data-parallel ranks (dp × pp at most 16384), 1-1000000 (default: 1)"),
           qPrintable(r.out));
  QVERIFY2(r.out.contains("  --gpu NAME\n") && !r.out.contains("--gpu-profile"), qPrintable(r.out));
}

// One row, two ranges: the estimator plans clusters the CPU trainer cannot run.
void TestCli::a_row_has_a_range_per_surface() {
  const Result estimate = run({"estimate", "--dp", "10000", "--json"});
  QVERIFY2(estimate.code == 0, qPrintable(estimate.err));
  const QJsonObject settings = QJsonDocument::fromJson(estimate.out.toUtf8()).object()["settings"].toObject();
  QCOMPARE(settings["dp"].toInt(), 10000);
  const Result too_many = run({"estimate", "--dp", "1000001"});
  QCOMPARE(too_many.code, 2);
  QVERIFY2(too_many.err.contains("--dp: 1000001 is out of range [1, 1000000]"), qPrintable(too_many.err));
  const Result train = run({"train", "--dp", "10000", "--steps", "1"});
  QCOMPARE(train.code, 2);
  QVERIFY2(train.err.contains("--dp: 10000 is out of range [1, 64]"), qPrintable(train.err));
}

// The ids of `tokenize --json` are the Hugging Face tokenizers library's
// (tests/fixtures/tokenizers/expected.json), for BERT and GPT-2 tokenizers.
void TestCli::tokenize_prints_the_tokenizers_library_ids() {
  QFile file(QString(SHARDSCOPE_FIXTURES) + "/tokenizers/expected.json");
  QVERIFY(file.open(QIODevice::ReadOnly));
  const QJsonObject expected = QJsonDocument::fromJson(file.readAll()).object();
  const QString text = expected["texts"].toArray()[2].toString();  // Chinese and "GPU"
  for (const auto& [dir, key] : {std::pair{"minilm_json", "wordpiece"}, std::pair{"bpe_files", "bpe"}}) {
    const Result r = run({"tokenize", "--tokenizer", QString(SHARDSCOPE_FIXTURES) + "/tokenizers/" + dir, "--text", text,
                          "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject out = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(out["ids"].toArray(), expected[key].toObject()["ids"].toArray()[2].toArray());
    QCOMPARE(out["tokens"].toArray().size(), out["ids"].toArray().size());
    QCOMPARE(out["decoded"].toString(), expected[key].toObject()["decoded"].toArray()[2].toString());
    QCOMPARE(out["tokenizer"].toString(), QString(key == std::string("bpe") ? "bpe" : "wordpiece"));
  }
  const Result human = run({"tokenize", "--tokenizer", QString(SHARDSCOPE_FIXTURES) + "/tokenizers/minilm_vocab",
                            "--text", "Hello [MASK]!"});
  QVERIFY2(human.code == 0, qPrintable(human.err));
  QVERIFY2(human.out.contains("5 ids: 101 7592 103 999 102"), qPrintable(human.out));
  QVERIFY2(human.out.contains("tokens: \"[CLS]\" \"hello\" \"[MASK]\" \"!\" \"[SEP]\""), qPrintable(human.out));
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
