// SPDX-License-Identifier: GPL-3.0-or-later
// Bad input never crashes: a table of distinct bad inputs (files the test
// writes, flags, special files), each run through shardscope-cli as a user
// would. Every row must exit 2 (bad input, not 1 "internal error", not a
// signal) within the time limit, with a message naming the field, file or
// offset, and never more than a few lines of it (no value dumped whole).
// Files: HF config.json (estimate --model), DeepSpeed JSON (--deepspeed),
// accelerate YAML (--accelerate, aliases that expand without end), recordings
// (export), special files (FIFO, directory, /dev/null, /dev/zero) wherever a
// file is named (configs, a Hugging Face folder's weights, launch's
// hostfile), checkpoint folders (--resume), and the flags and counts whose
// values have limits (launch's process count).
//
// SHARDSCOPE_CLI in the environment runs the table against another build
// (e.g. one with -fsanitize=address,undefined).
#include <sys/stat.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#undef emit  // Qt's keyword macro would eat EventSink::emit

#include "events/recording.h"

namespace {

struct Result {
  int code;  // exit code; -1 timed out, -2 crashed (a signal)
  QString out, err;
};

Result run_cli(const QStringList& args, int timeout_ms = 60000) {
  const QString cli = qEnvironmentVariableIsSet("SHARDSCOPE_CLI") ? qEnvironmentVariable("SHARDSCOPE_CLI")
                                                                  : QStringLiteral(SHARDSCOPE_CLI);
  QProcess p;
  p.start(cli, args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

QByteArray nested(const QByteArray& open, const QByteArray& close, int depth) {
  return open.repeated(depth) + close.repeated(depth);
}

// A config of `base` keys with `extra`'s keys added, or in place of the base's
// of the same name: each key once (a key given twice is refused by itself).
QByteArray config_with(const QList<QPair<QByteArray, QByteArray>>& base, const QByteArray& extra) {
  QByteArrayList keys;
  for (const auto& [key, value] : base) {
    const QByteArray quoted = "\"" + key + "\":";
    if (!extra.startsWith(quoted) && !extra.contains(", " + quoted)) keys << quoted + " " + value;
  }
  if (!extra.isEmpty()) keys << extra;
  return "{" + keys.join(", ") + "}";
}

QByteArray gpt2(const QByteArray& extra) {  // a small GPT-2 config with keys added or overridden
  return config_with({{"model_type", "\"gpt2\""},
                      {"vocab_size", "1000"},
                      {"n_embd", "64"},
                      {"n_layer", "2"},
                      {"n_head", "4"},
                      {"n_positions", "128"}},
                     extra);
}

QByteArray llama(const QByteArray& extra) {
  return config_with({{"model_type", "\"llama\""},
                      {"vocab_size", "1000"},
                      {"hidden_size", "64"},
                      {"intermediate_size", "128"},
                      {"num_hidden_layers", "2"},
                      {"num_attention_heads", "4"}},
                     extra);
}

// Nine anchors, each listing the one before ten times: 10^9 values from 400 bytes.
QByteArray billion_laughs() {
  QByteArray yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 8; ++i) {
    const QByteArray prev = "*a" + QByteArray::number(i - 1);
    yaml +=
        "a" + QByteArray::number(i) + ": &a" + QByteArray::number(i) + " [" + (prev + ", ").repeated(9) + prev + "]\n";
  }
  return yaml + "distributed_type: MULTI_GPU\n";
}

// Config files: name -> contents.
const QList<QPair<QString, QByteArray>>& config_files() {
  static const QList<QPair<QString, QByteArray>> files = {
      // HF config.json
      {"deep_vocab.json", "{\"model_type\":\"gpt2\",\"vocab_size\":" + nested("[", "]", 60000) + "}"},
      {"nested_vocab.json", gpt2("\"vocab_size\": " + nested("[", "]", 400))},
      {"long_vocab.json", gpt2("\"vocab_size\": [" + QByteArray("0,").repeated(99999) + "0]")},
      {"long_string.json", gpt2("\"model_type\": \"" + QByteArray(100000, 'x') + "\"")},
      {"huge_number.json", "{\"model_type\":\"gpt2\",\"vocab_size\":1e400}"},
      {"huge_nested_number.json", gpt2("\"task_specific_params\": {\"x\": [1, -1e999]}")},
      {"positions.json", gpt2("\"n_positions\": 2147483648")},
      {"float_vocab.json", gpt2("\"vocab_size\": 1e30")},
      {"unsigned_vocab.json", gpt2("\"vocab_size\": 18446744073709551615")},
      {"negative_vocab.json", gpt2("\"vocab_size\": -5")},
      {"fraction_vocab.json", gpt2("\"vocab_size\": 1.5")},
      {"string_vocab.json", gpt2("\"vocab_size\": \"big\"")},
      {"bool_layers.json", gpt2("\"n_layer\": true")},
      {"huge_model.json", gpt2("\"vocab_size\": 1073741824, \"n_embd\": 1048576, \"n_layer\": 65536")},
      {"huge_llama.json", llama("\"hidden_size\": 1048576, \"num_attention_heads\": 65536, \"head_dim\": 65536, "
                                "\"num_hidden_layers\": 65536")},
      {"no_type.json", "{\"vocab_size\": 5}"},
      {"t5.json", "{\"model_type\": \"t5\"}"},
      {"array_top.json", "[1, 2]"},
      {"trailing_comma.json", "{\n  \"model_type\": \"gpt2\",\n}\n"},
      {"not_json.json", "hello world"},
      {"bad_heads.json", gpt2("\"n_head\": 7")},
      {"bad_kv_heads.json", llama("\"num_key_value_heads\": 3")},
      {"long_context.json", gpt2("\"n_positions\": 1073741824")},
      {"many_layers.json", gpt2("\"n_layer\": 65536")},
      {"empty.json", ""},
      {"bad_utf8.json", gpt2("\"activation_function\": \"\xff\xfe\"")},
      // DeepSpeed JSON
      {"ds_deep.json", "{\"train_batch_size\":" + nested("[", "]", 60000) + "}"},
      {"ds_deep_objects.json",
       "{\"zero_optimization\":" + QByteArray("{\"a\":").repeated(5000) + "1" + QByteArray("}").repeated(5000) + "}"},
      {"ds_huge.json", "{\"train_batch_size\": 1e400}"},
      {"ds_batch_2_32.json", "{\"train_batch_size\": 4294967297}"},
      {"ds_batch_2_40.json", "{\"train_batch_size\": 1099511627776}"},
      {"ds_batch_over.json", "{\"train_batch_size\": 1099511627777}"},
      {"ds_accum_derived.json", "{\"train_batch_size\": 1099511627776, \"train_micro_batch_size_per_gpu\": 1}"},
      {"ds_stage.json", "{\"zero_optimization\": {\"stage\": 4}}"},
      {"ds_zero_list.json", "{\"zero_optimization\": []}"},
      {"ds_both_precisions.json", "{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}"},
      {"ds_offload.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"gpu\"}}}"},
      {"ds_micro_zero.json", "{\"train_micro_batch_size_per_gpu\": 0}"},
      {"ds_batch_string.json", "{\"train_batch_size\": \"x\"}"},
      {"ds_huge_batch.json",
       "{\"train_micro_batch_size_per_gpu\": 16777216, \"gradient_accumulation_steps\": 16777216}"},
      // accelerate YAML
      {"acc_deep.yaml", "distributed_type: " + nested("[", "]", 60000) + "\n"},
      {"acc_eight.yaml", "distributed_type: MULTI_GPU\nnum_processes: eight\n"},
      {"acc_no_type.yaml", "num_processes: 8\n"},
      {"acc_stage.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 5\n"},
      {"acc_huge.yaml", "distributed_type: MULTI_GPU\nnum_processes: 99999999999\n"},
      {"acc_list.yaml", "- a\n- b\n"},
      {"acc_split.yaml", "distributed_type: MULTI_GPU\nnum_processes: 8\nnum_machines: 3\n"},
      {"acc_ds_dir.yaml", "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: a_directory\n"},
      {"acc_unclosed.yaml", "distributed_type: [MULTI_GPU\n"},
      {"acc_laughs.yaml", billion_laughs()},
      {"acc_cycle.yaml", "distributed_type: &a [MULTI_GPU, *a]\n"},
      // launch's hostfiles: two machines, and 2^19 of them (x 4096 processes = 2^31, past an int)
      {"two_hosts", "node-a\n# a comment\nnode-b\n"},
      {"many_hosts", QByteArray("h\n").repeated(1 << 19)},
      // A checkpoint manifest whose first parameter's shape multiplies past 64 bits (the fields before it valid)
      {"ckpt_overflow/manifest.json",
       R"({"format": "shardscope-checkpoint", "format_version": 1, "step": 1, "model": {},
           "parameters": [["embed.tokens", [4294967296, 4294967297]]]})"},
  };
  return files;
}

}  // namespace

class TestBadInput : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void exits_2_naming_the_problem_data();
  void exits_2_naming_the_problem();
  void help_states_the_limits();
  void extreme_configs_give_consistent_estimates();

 private:
  QString path(const QString& name) const { return dir_.path() + "/" + name; }
  void write(const QString& name, const QByteArray& bytes) {
    QFile f(path(name));
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
  }
  void write_recordings();

  QTemporaryDir dir_;
};

void TestBadInput::write_recordings() {
  using shardscope::RecordingWriter;
  auto recording = [&](const QString& name, const std::string& metadata) {
    { RecordingWriter writer(path(name).toStdString(), metadata); }
    QFile f(path(name));
    if (!f.open(QIODevice::ReadOnly)) return QByteArray();
    return f.readAll();
  };
  // The writer checks its metadata; a damaged file is made by patching a good one.
  QByteArray bytes = recording("huge.ssrun", "{\"dp\": 1e300}");
  write("huge.ssrun", bytes.replace("1e300", "1e400"));
  recording("deep.ssrun", "{\"x\": " + nested("[", "]", 600).toStdString() + "}");
  bytes = recording("kind.ssrun", "{}");
  {
    RecordingWriter writer(path("kind.ssrun").toStdString(), "{}");
    shardscope::Event e;
    e.kind = shardscope::EventKind::log;
    writer.emit(e);
  }
  QFile f(path("kind.ssrun"));
  QVERIFY(f.open(QIODevice::ReadOnly));
  bytes = f.readAll();
  f.close();
  bytes[22] = static_cast<char>(200);  // the first record's kind, after the 20-byte header and "{}"
  write("kind.ssrun", bytes);
  write("short.ssrun", bytes.left(12));
}

void TestBadInput::initTestCase() {
  QVERIFY(dir_.isValid());
  QVERIFY(QDir().mkpath(path("ckpt_overflow")));
  for (const auto& [name, contents] : config_files()) write(name, contents);
  QVERIFY(QDir().mkpath(path("a_directory")));
  // Hugging Face folders whose weights are a FIFO: a reader that opens it waits for a writer forever.
  for (const char* model : {"bert_tiny", "gpt2_tiny"}) {
    const QString folder = path(QString(model) + "_fifo");
    QVERIFY(QDir().mkpath(folder));
    QVERIFY(QFile::copy(SHARDSCOPE_FIXTURES "/hf/" + QString(model) + "/config.json", folder + "/config.json"));
    QCOMPARE(::mkfifo((folder + "/model.safetensors").toLocal8Bit().constData(), 0600), 0);
  }
  // A hostfile past the 4 MiB a list of machines needs (sparse: no disk written).
  QFile big(path("big_hostfile"));
  QVERIFY(big.open(QIODevice::WriteOnly) && big.resize(5 << 20));
  QVERIFY(QDir().mkpath(path("runs/step-99999999999999999999")));  // a step number past 64 bits
  write("runs/step-99999999999999999999/manifest.json", "{}");
  QCOMPARE(::mkfifo(path("fifo").toLocal8Bit().constData(), 0600), 0);  // no writer: opening it would block
  write_recordings();
}

void TestBadInput::exits_2_naming_the_problem_data() {
  QTest::addColumn<QStringList>("args");  // "@" at the start of an argument: the test's folder
  QTest::addColumn<QString>("message");
  auto row = [](const char* name, QStringList args, const char* message) {
    QTest::newRow(name) << args << QString::fromUtf8(message);
  };
  const QString model = "--model", ds = "--deepspeed", acc = "--accelerate";
  // Item 2: deep nesting never overflows the stack; a value is named by its type, never dumped.
  row("HF value 60000 levels deep", {"estimate", model, "@deep_vocab.json"},
      "deep_vocab.json: line 1, column 546: values nest deeper than 512 levels");
  row("HF value 400 levels deep", {"estimate", model, "@nested_vocab.json"},
      "vocab_size: expected an integer, got array of 1 element");
  row("HF value of 100000 elements", {"estimate", model, "@long_vocab.json"},
      "vocab_size: expected an integer, got array of 100000 elements");
  row("HF string of 100000 bytes", {"estimate", model, "@long_string.json"}, "is not supported");
  row("DeepSpeed value 60000 levels deep", {"estimate", ds, "@ds_deep.json"},
      "ds_deep.json: line 1, column 532: values nest deeper than 512 levels");
  row("DeepSpeed objects 5000 levels deep", {"estimate", ds, "@ds_deep_objects.json"},
      "values nest deeper than 512 levels");
  row("accelerate YAML 60000 levels deep", {"estimate", acc, "@acc_deep.yaml"},
      "acc_deep.yaml: line 1: values nest too deeply");
  row("recording metadata 600 levels deep", {"export", "--chrome-trace", "@t.json", "@deep.ssrun"},
      "deep.ssrun: byte 537: the metadata is not valid JSON (values nest deeper than 512 levels)");
  // Item 4: numbers beyond a double's range are bad input, with their place.
  row("HF number 1e400", {"estimate", model, "@huge_number.json"},
      "huge_number.json: line 1, column 35: key 'vocab_size': the number 1e400 is beyond the range of a double");
  row("HF number -1e999 in an unknown block", {"estimate", model, "@huge_nested_number.json"},
      "key 'x': the number -1e999 is beyond the range of a double");
  row("DeepSpeed number 1e400", {"estimate", ds, "@ds_huge.json"},
      "ds_huge.json: line 1, column 22: key 'train_batch_size': the number 1e400");
  row("recording metadata 1e400", {"export", "--chrome-trace", "@t.json", "@huge.ssrun"},
      "huge.ssrun: byte 27: the metadata is not valid JSON (key 'dp': the number 1e400");
  // Item 6: range limits named in the error; narrowing refused, never wrapped.
  row("HF n_positions 2^31", {"estimate", model, "@positions.json"},
      "positions.json line 1: n_positions: 2147483648 is out of range [1, 1073741824]");
  row("HF vocab_size 1e30", {"estimate", model, "@float_vocab.json"},
      "vocab_size: 1e+30 is out of range [1, 1073741824]");
  row("HF vocab_size 2^64 - 1", {"estimate", model, "@unsigned_vocab.json"},
      "vocab_size: 18446744073709551615 is out of range [1, 1073741824]");
  row("HF vocab_size -5", {"estimate", model, "@negative_vocab.json"}, "vocab_size: -5 is out of range");
  row("HF vocab_size 1.5", {"estimate", model, "@fraction_vocab.json"},
      "vocab_size: expected an integer, got number 1.5");
  row("HF vocab_size a string", {"estimate", model, "@string_vocab.json"},
      "vocab_size: expected an integer, got string \"big\"");
  row("HF n_layer a boolean", {"estimate", model, "@bool_layers.json"},
      "n_layer: expected an integer, got boolean true");
  row("HF parameter count past 64 bits", {"estimate", model, "@huge_model.json"},
      "huge_model.json: the model's parameter count is out of range");
  row("Llama heads x head_dim past 64 bits", {"estimate", model, "@huge_llama.json"},
      "huge_llama.json: the model's parameter count is out of range");
  row("activations of seq 2^30 past 64 bits", {"estimate", model, "@long_context.json"},
      "activations of micro-batch 1 × seq 1073741824 on");
  row("formula activations of seq 2^30 past 64 bits",
      {"estimate", model, "@long_context.json", "--activations", "formula"}, "do not fit in 64-bit byte counts");
  row("DeepSpeed train_batch_size 2^32 + 1", {"estimate", ds, "@ds_batch_2_32.json"},
      "ds_batch_2_32.json: train_batch_size 4294967297 gives a micro-batch per rank of 4294967297, more than "
      "--micro-batch takes (at most 16777216)");
  row("DeepSpeed train_batch_size 2^40", {"estimate", ds, "@ds_batch_2_40.json"},
      "train_batch_size 1099511627776 gives a micro-batch per rank of 1099511627776");
  row("DeepSpeed train_batch_size 2^40 + 1", {"estimate", ds, "@ds_batch_over.json"},
      "train_batch_size: 1099511627777 is out of range [1, 1099511627776]");
  row("DeepSpeed accumulation derived past the limit", {"estimate", ds, "@ds_accum_derived.json"},
      "train_batch_size 1099511627776 gives gradient accumulation steps 1099511627776");
  row("sharding plan past its size limit", {"estimate", model, "@many_layers.json", "--dp", "64"},
      "--dp x --pp ranks x (65536 layers + 2) units = 4194432: at most 4194304");
  row("global batch past 64 bits",
      {"estimate", ds, "@ds_huge_batch.json", "--dp", "16384", "--micro-batches", "1048576"},
      "does not fit in 64-bit counts");
  // Item 7 and 9: special files are refused by name, never read (a FIFO would block forever).
  row("HF config a FIFO", {"estimate", model, "@fifo"}, "--model: '@fifo' is a FIFO (named pipe), not a file");
  row("HF config a directory", {"estimate", model, "@a_directory"}, "is a directory, not a file");
  row("HF config /dev/null", {"estimate", model, "/dev/null"},
      "--model: '/dev/null' is a character device, not a file");
  row("HF config empty", {"estimate", model, "@empty.json"}, "--model: '@empty.json' is an empty file");
  row("HF config in a missing folder", {"estimate", model, "@no/such/config"},
      "--model: cannot open '@no/such/config'");
  row("DeepSpeed config a FIFO", {"estimate", ds, "@fifo"}, "--deepspeed: '@fifo' is a FIFO (named pipe)");
  row("DeepSpeed config a directory", {"estimate", ds, "@a_directory"}, "--deepspeed: '@a_directory' is a directory");
  row("accelerate config a FIFO", {"estimate", acc, "@fifo"}, "--accelerate: '@fifo' is a FIFO (named pipe)");
  row("accelerate config a directory", {"estimate", acc, "@a_directory"},
      "--accelerate: '@a_directory' is a directory, not a file");
  row("accelerate's DeepSpeed file a directory", {"estimate", acc, "@acc_ds_dir.yaml"},
      "acc_ds_dir.yaml: deepspeed_config.deepspeed_config_file: '@a_directory' is a directory");
  row("checkpoint root with a step past 64 bits", {"train", "--resume", "@runs"},
      "runs: no checkpoint here (neither manifest.json nor a step-N directory holding one)");
  row("launch of a launch", {"launch", "--nproc-per-node", "2", "--", "launch", "--nproc-per-node", "2", "--", "train"},
      "launch -- launch: mpirun cannot start mpirun");
  row("BERT weights a FIFO (hidden-states)", {"hidden-states", model, "@bert_tiny_fifo", "--text", "hi", "--json"},
      "@bert_tiny_fifo/model.safetensors: cannot read: it is a FIFO (named pipe), not a regular file");
  row("BERT weights a FIFO (train --init-from)",
      {"train", "--init-from", "@bert_tiny_fifo", "--seq", "16", "--steps", "1"},
      "@bert_tiny_fifo/model.safetensors: cannot read: it is a FIFO (named pipe), not a regular file");
  row("GPT-2 weights a FIFO (train --init-from)",
      {"train", "--init-from", "@gpt2_tiny_fifo", "--seq", "16", "--steps", "1"},
      "@gpt2_tiny_fifo/model.safetensors: is a FIFO (named pipe), not a .safetensors file");
  row("hostfile a FIFO", {"launch", "--nproc-per-node", "2", "--hostfile", "@fifo", "--dry-run", "--", "train"},
      "--hostfile: '@fifo' is a FIFO (named pipe), not a file");
  row("hostfile /dev/zero", {"launch", "--nproc-per-node", "2", "--hostfile", "/dev/zero", "--dry-run", "--", "train"},
      "--hostfile: '/dev/zero' is a character device, not a file");
  row("hostfile of 5 MiB",
      {"launch", "--nproc-per-node", "2", "--hostfile", "@big_hostfile", "--dry-run", "--", "train"},
      "--hostfile: '@big_hostfile' is 5242880 bytes; a config file is at most 4194304 bytes");
  // A count that feeds a process launch is checked, never wrapped (4096 x 2^19 was -np -2147483648, exit 0).
  row("launch processes past an int",
      {"launch", "--nproc-per-node", "4096", "--hostfile", "@many_hosts", "--dry-run", "--", "train"},
      "--nproc-per-node 4096 x 524288 machines in --hostfile '@many_hosts' = 2147483648 processes: at most 4096");
  row("launch processes past a run's ranks",
      {"launch", "--nproc-per-node", "4096", "--hostfile", "@two_hosts", "--dry-run", "--", "train"},
      "= 8192 processes: at most 4096 (a run's most ranks, --dp 64 x --pp 64)");
  row("accelerate aliases past a bound (billion laughs)", {"estimate", acc, "@acc_laughs.yaml"},
      "acc_laughs.yaml: line 5: its aliases expand the document past 100000 values");
  row("accelerate aliases past a bound (train)", {"train", acc, "@acc_laughs.yaml", "--steps", "1"},
      "acc_laughs.yaml: line 5: its aliases expand the document past 100000 values");
  row("accelerate alias inside its anchor", {"estimate", acc, "@acc_cycle.yaml"},
      "acc_cycle.yaml: line 1: an alias inside the node its anchor names");
  row("checkpoint shape past 64 bits", {"train", "--resume", "@ckpt_overflow"},
      "ckpt_overflow/manifest.json: field 'parameters[0][1]': the dimensions multiply to more than 2^63 - 1 elements");
  row("recording a FIFO", {"export", "--chrome-trace", "@t.json", "@fifo"},
      "RUN.ssrun: cannot read '@fifo': it is a FIFO (named pipe), not a regular file");
  row("recording a directory", {"export", "--chrome-trace", "@t.json", "@a_directory"},
      "RUN.ssrun: cannot read '@a_directory': it is a directory, not a regular file");
  row("--gpu-mem negative", {"estimate", "--gpu-mem", "-5GB"}, "--gpu-mem: '-5GB' is not a positive memory size");
  row("--gpu-mem past a double", {"estimate", "--gpu-mem", "1e400GB"}, "--gpu-mem: '1e400GB' is not a memory size");
  row("--gpu-mem not a number", {"estimate", "--gpu-mem", "nanGB"}, "--gpu-mem: 'nanGB' is not a memory size");
  row("--gpu-mem too large", {"estimate", "--gpu-mem", "2000000TB"}, "--gpu-mem: '2000000TB' is too large");
  row("schedule past its size limit", {"schedule", "--pp", "256", "--micro-batches", "4096", "--communication"},
      "--pp 256 × --micro-batches 4096 = 1048576: at most 65536");
  row("schedule time past its limit", {"schedule", "--forward-time", "1e30"},
      "--forward-time and --backward-time must be in (0, 1000000]");
  // Other bad input found in the parsers.
  row("HF missing model_type", {"estimate", model, "@no_type.json"}, "no_type.json: missing key 'model_type'");
  row("HF unsupported model_type", {"estimate", model, "@t5.json"}, "model_type: 't5' is not supported");
  row("HF top level an array", {"estimate", model, "@array_top.json"},
      "array_top.json: the top level must be a JSON object {...}, not array");
  row("HF trailing comma", {"estimate", model, "@trailing_comma.json"},
      "trailing_comma.json: line 3, column 1: syntax error");
  row("HF not JSON", {"estimate", model, "@not_json.json"}, "(is this a JSON file?)");
  row("HF invalid UTF-8", {"estimate", model, "@bad_utf8.json"}, "bad_utf8.json: line 1, column");
  row("HF heads not dividing", {"estimate", model, "@bad_heads.json"}, "n_head: 7 does not divide the hidden size 64");
  row("Llama kv heads not dividing", {"estimate", model, "@bad_kv_heads.json"},
      "num_key_value_heads: 3 does not divide num_attention_heads 4");
  row("DeepSpeed ZeRO stage 4", {"estimate", ds, "@ds_stage.json"},
      "ds_stage.json line 1: zero_optimization.stage: 4 is out of range [0, 3]");
  row("DeepSpeed zero_optimization a list", {"estimate", ds, "@ds_zero_list.json"},
      "zero_optimization: expected an object");
  row("DeepSpeed fp16 and bf16", {"estimate", ds, "@ds_both_precisions.json"}, "fp16 and bf16 are both enabled");
  row("DeepSpeed offload to a GPU", {"estimate", ds, "@ds_offload.json"},
      "zero_optimization.offload_param.device: 'gpu' is not one of none, cpu, nvme");
  row("DeepSpeed micro-batch 0", {"estimate", ds, "@ds_micro_zero.json"},
      "train_micro_batch_size_per_gpu: 0 is out of range [1, 16777216]");
  row("DeepSpeed batch a string", {"estimate", ds, "@ds_batch_string.json"},
      "train_batch_size: expected an integer, got string \"x\"");
  row("accelerate num_processes a word", {"estimate", acc, "@acc_eight.yaml"},
      "acc_eight.yaml line 2: num_processes: expected an integer, got 'eight'");
  row("accelerate num_processes past an int", {"estimate", acc, "@acc_huge.yaml"},
      "num_processes: expected an integer, got '99999999999'");
  row("accelerate missing distributed_type", {"estimate", acc, "@acc_no_type.yaml"}, "missing key 'distributed_type'");
  row("accelerate ZeRO stage 5", {"estimate", acc, "@acc_stage.yaml"},
      "acc_stage.yaml line 3: deepspeed_config.zero_stage: expected 0, 1, 2 or 3, got 5");
  row("accelerate top level a list", {"estimate", acc, "@acc_list.yaml"}, "the top level must be a mapping");
  row("accelerate processes not splitting", {"estimate", acc, "@acc_split.yaml"},
      "num_processes 8 does not split over num_machines 3");
  row("accelerate unclosed list", {"estimate", acc, "@acc_unclosed.yaml"}, "acc_unclosed.yaml: line 2, column");
  row("recording unknown event kind", {"export", "--chrome-trace", "@t.json", "@kind.ssrun"},
      "kind.ssrun: byte 22: record 0: unknown event kind 200");
  row("recording cut in its header", {"export", "--chrome-trace", "@t.json", "@short.ssrun"},
      "short.ssrun: byte 12: the header is cut off after 12 bytes");
  // Expert parallelism: the experts and the dp ranks must split over ep (issue 33).
  row("ep not dividing the experts", {"train", model, "gpt-tiny-moe", "--dp", "3", "--ep", "3", "--batch", "9"},
      "--ep 3: the 4 experts of gpt-tiny-moe do not split over 3 expert-parallel ranks");
  row("ep not dividing dp", {"train", model, "gpt-tiny-moe", "--dp", "2", "--ep", "4"},
      "--ep 4 does not divide --dp 2");
  row("ep without experts", {"train", model, "gpt-tiny", "--dp", "2", "--ep", "2"},
      "--ep 2 needs a mixture-of-experts model; gpt-tiny has no experts");
  row("MoE with tp", {"train", model, "gpt-tiny-moe", "--tp", "2"},
      "--model gpt-tiny-moe (mixture of experts) with --tp 2 is not built yet");
  row("MoE with cp", {"train", model, "gpt-tiny-moe", "--cp", "2"},
      "--model gpt-tiny-moe (mixture of experts) with --cp 2 is not built yet");
}

void TestBadInput::exits_2_naming_the_problem() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  const QString folder = dir_.path() + "/";
  for (QString& arg : args)
    if (arg.startsWith('@')) arg = folder + arg.mid(1);
  message.replace("'@", "'" + folder);
  if (message.startsWith('@')) message = folder + message.mid(1);
  QElapsedTimer timer;
  timer.start();
  const Result r = run_cli(args, 30000);
  const QString what = args.join(' ') + " -> exit " + QString::number(r.code) + " after " +
                       QString::number(timer.elapsed()) + " ms, stderr: " + r.err.left(2000);
  QVERIFY2(r.code == 2, qPrintable(what));
  QVERIFY2(r.err.contains(message), qPrintable("expected '" + message + "' in: " + what));
  QVERIFY2(r.err.size() < 2000, qPrintable("a message of " + QString::number(r.err.size()) + " bytes: " + what));
  QVERIFY2(timer.elapsed() < 20000, qPrintable(what));
}

// The limits the table runs into are stated in --help.
void TestBadInput::help_states_the_limits() {
  const Result schedule = run_cli({"schedule", "--help"});
  QCOMPARE(schedule.code, 0);
  QVERIFY2(schedule.out.contains("p × m at most 65536"), qPrintable(schedule.out));
  QVERIFY2(schedule.out.contains("in (0, 1000000]"), qPrintable(schedule.out));
  const Result estimate = run_cli({"estimate", "--help"});
  QCOMPARE(estimate.code, 0);
  for (const char* limit : {"1-1000000", "1-10000", "1-16777216", "1-1048576", "1-65536", "positive, at most"})
    QVERIFY2(estimate.out.contains(limit), limit);
}

// Item 6: extreme configs that are accepted print no negative byte count,
// and every rank's total is the sum of its categories.
void TestBadInput::extreme_configs_give_consistent_estimates() {
  write("wide.json", gpt2("\"vocab_size\": 1073741824, \"n_embd\": 1024, \"n_head\": 16"));
  write("long.json", gpt2("\"n_positions\": 1073741824"));
  write("deep_llama.json", llama("\"hidden_size\": 16384, \"intermediate_size\": 65536, \"num_hidden_layers\": 65536, "
                                 "\"num_attention_heads\": 128"));
  const QList<QStringList> runs = {
      {"--model", path("wide.json"), "--seq", "128", "--micro-batch", "16777216"},
      {"--model", path("long.json"), "--seq", "1048576", "--activations", "formula"},
      {"--model", path("deep_llama.json"), "--seq", "4096", "--dp", "64", "--zero", "3"},
      {"--model", path("deep_llama.json"), "--seq", "16777216", "--micro-batch", "64", "--pp", "8"},
      {"--micro-batch", "16777216", "--accum", "16777216", "--dp", "16", "--micro-batches", "1048576", "--pp", "2"},
  };
  for (const QStringList& flags : runs) {
    const Result r = run_cli(QStringList{"estimate", "--json"} + flags);
    QVERIFY2(r.code == 0 || r.code == 2, qPrintable(flags.join(' ') + ": " + r.err));
    if (r.code == 2) continue;  // refused with a message: fine, as long as it is not wrong
    const QJsonObject root = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY2(!root.isEmpty(), qPrintable(flags.join(' ') + ": " + r.out.left(500)));
    for (const QJsonValue& rank : root["ranks"].toArray()) {
      const QJsonObject bytes = rank.toObject()["bytes"].toObject();
      double sum = 0;
      for (const QString& key : bytes.keys()) {
        QVERIFY2(bytes[key].toDouble() >= 0, qPrintable(flags.join(' ') + ": " + key));
        sum += bytes[key].toDouble();
      }
      const double total = rank.toObject()["total_bytes"].toDouble();
      QVERIFY2(total >= 0 && std::abs(total - sum) <= 1e-9 * total + 1, qPrintable(flags.join(' ')));
    }
  }
}

QTEST_GUILESS_MAIN(TestBadInput)
#include "test_bad_input.moc"
