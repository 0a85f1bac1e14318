// SPDX-License-Identifier: GPL-3.0-or-later
// estimate's defaults as a practitioner expects them (issue 28, item 7): the
// shipped model configs by name (gpt3-175b, llama-2-7b, ...), activations as
// GPU frameworks keep them (16-bit under bf16/fp16) with this engine's exact
// ones one flag away, and the model states' subtotal in the table and --json.
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "cli/cli_runner.h"

namespace {

QJsonObject estimateJson(QStringList args) {
  args.prepend("estimate");
  args << "--json";
  const CliResult r = run_cli(args);
  if (r.code != 0) qWarning("%s -> %d: %s", qPrintable(args.join(' ')), r.code, qPrintable(r.err));
  return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

// A fixture config.json with its layer count changed (`key`: n_layer or num_hidden_layers), written to
// `dir`/config.json: the shape of a built-in preset, as a file `train --model` trains.
QString configWithLayers(const QTemporaryDir& dir, const char* fixture, const char* key, int layers) {
  QFile in(QStringLiteral(SHARDSCOPE_FIXTURES "/") + fixture + "/config.json");
  if (!in.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(in.fileName()));
  QJsonObject config = QJsonDocument::fromJson(in.readAll()).object();
  config[key] = layers;
  QFile out(dir.filePath("config.json"));
  if (!out.open(QIODevice::WriteOnly) || out.write(QJsonDocument(config).toJson()) < 0)
    qFatal("cannot write %s", qPrintable(out.fileName()));
  return out.fileName();
}

double rankBytes(const QJsonObject& estimate, const char* category) {
  return estimate["ranks"].toArray()[0].toObject()["bytes"].toObject()[category].toDouble();
}

}  // namespace

class TestEstimateDefaults : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The example the issue names: GPT-3 175B by name, checked against an A100's 80 GB.
  void gpt3ByNameOnAnA100() {
    const CliResult r = run_cli({"estimate", "--model", "gpt3-175b", "--gpu", "A100-80GB"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith("Estimate for gpt3-175b: 174,604,259,328 parameters"), qPrintable(r.out.left(200)));
    QVERIFY2(r.out.contains("Fit on A100-80GB") && r.out.contains("does not fit by"), qPrintable(r.out));
  }

  // Every shipped config has a name; each reads as the file itself does (the same reader).
  void everyShippedConfigHasAName() {
    const QString examples = QStringLiteral(SHARDSCOPE_FIXTURES "/../../resources/examples/");
    const struct {
      const char* name;
      const char* file;
      double parameters;
    } aliases[] = {{"gpt3-175b", "gpt3_175b_config.json", 174604259328.0},
                   {"gpt3", "gpt3_175b_config.json", 174604259328.0},
                   {"llama-2-7b", "llama_2_7b_config.json", 6738415616.0},
                   {"llama-2-13b", "llama_2_13b_config.json", 13015864320.0},
                   {"llama-2-70b", "llama_2_70b_config.json", 68976648192.0}};
    for (const auto& a : aliases) {
      const QJsonObject byName = estimateJson({"--model", a.name});
      const QJsonObject byFile = estimateJson({"--model", examples + a.file});
      QCOMPARE(byName["model"].toObject()["name"].toString(), QString(a.name));
      QCOMPARE(byName["model"].toObject()["parameters"].toDouble(), a.parameters);
      QCOMPARE(byName["ranks"], byFile["ranks"]);
    }
  }

  // A config.json that `train --model` trains is estimated as the model train builds from it: the
  // same numbers as the built-in preset of its shape, on every layout (the vocabulary split unpadded,
  // engine-exact where the engine trains the layout), not "model only".
  void trainedConfigFileEstimatesAsItsPreset() {
    QTemporaryDir gptDir, bertDir;
    const QString gptTiny = configWithLayers(gptDir, "gpt_tiny_8_layers", "n_layer", 4);
    const QString bertTiny = configWithLayers(bertDir, "bert_tiny_4_layers", "num_hidden_layers", 2);
    const QStringList layouts[] = {
        {},
        {"--activations", "shardscope", "--dp", "2", "--pp", "2", "--zero", "1"},
        {"--tp", "2", "--pp", "2", "--gpu", "H100"},
        {"--activations", "shardscope", "--tp", "2", "--sequence-parallel", "--gpu", "H100", "--time-model", "flat"},
        {"--activations", "shardscope", "--dp", "2", "--zero", "3", "--precision", "bf16"},
        {"--activations", "shardscope", "--pp", "2", "--schedule", "zb-v", "--micro-batches", "4", "--gpu", "H100"},
        {"--activations", "shardscope", "--pp", "2", "--schedule", "interleaved-1f1b", "--virtual-stages", "2",
         "--micro-batches", "2"},
        {"--activations", "shardscope", "--cp", "2", "--seq", "128", "--checkpoint", "full"}};
    for (const auto& [preset, file] :
         {std::pair{QString("gpt-tiny"), gptTiny}, std::pair{QString("bert-tiny"), bertTiny}})
      for (const QStringList& layout : layouts) {
        const QString what = file + " " + layout.join(' ');
        const CliResult byPreset = run_cli(QStringList{"estimate", "--model", preset, "--json"} + layout);
        const CliResult byFile = run_cli(QStringList{"estimate", "--model", file, "--json"} + layout);
        QVERIFY2(byFile.code == byPreset.code, qPrintable(what + ": " + byFile.err));
        if (byPreset.code != 0) {  // refused alike (bert-tiny's 2 layers make no ZB-V chunks), the model's name aside
          QCOMPARE(QString(byFile.err).replace(QFileInfo(file).path(), preset), byPreset.err);
          continue;
        }
        QJsonObject presetJson = QJsonDocument::fromJson(byPreset.out.toUtf8()).object();
        QJsonObject fileJson = QJsonDocument::fromJson(byFile.out.toUtf8()).object();
        QCOMPARE(fileJson["model"].toObject()["preset"].toString(), file);  // what train --model takes
        presetJson.remove("model");
        fileJson.remove("model");
        QVERIFY2(fileJson == presetJson,
                 qPrintable(what + "\n" + byFile.out + "\nagainst " + preset + ":\n" + byPreset.out));
      }
    // The fixture as train builds it: no pooler (no weights say one), exact for a layout train runs.
    const QString bert4 = SHARDSCOPE_FIXTURES "/bert_tiny_4_layers/config.json";
    const QJsonObject e = estimateJson({"--model", bert4, "--activations", "shardscope", "--dp", "2", "--pp", "2"});
    QCOMPARE(e["model"].toObject()["parameters"].toDouble(), 876676.0);  // train's "876676 parameters"
    QVERIFY2(e["engine_exact"].toBool(), qPrintable(e["basis"].toString()));
    // A file train does not take (not named config.json) is still counted from its keys, as before.
    const QJsonObject keys = estimateJson({"--model", SHARDSCOPE_FIXTURES "/configs/gpt2_config.json"});
    QVERIFY(keys["model"].toObject()["preset"].isNull());
    QVERIFY2(keys["basis"].toString().startsWith("model only"), qPrintable(keys["basis"].toString()));
  }

  // An unknown name keeps its "did you mean" and lists the shipped configs beside the presets.
  void unknownNameListsTheAliases() {
    const CliResult r = run_cli({"estimate", "--model", "llama-2-7"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("unknown model preset 'llama-2-7'; did you mean 'llama-2-7b'?") &&
                 r.err.contains("shipped model configs: gpt3-175b, gpt3, llama-2-7b, llama-2-13b, llama-2-70b"),
             qPrintable(r.err));
  }

  // GPU conventions by default: bf16 keeps 16-bit activations (sbh(34 + 5as/h) per layer),
  // so it needs less than fp32 (sbh(66 + 9as/h)); --activations shardscope gives this engine's
  // fp32 CPU activations, the same in both precisions.
  void gpuActivationsByDefaultEngineOnesOneFlagAway() {
    const QJsonObject fp32 = estimateJson({"--model", "gpt3-175b", "--precision", "fp32"});
    const QJsonObject bf16 = estimateJson({"--model", "gpt3-175b", "--precision", "bf16"});
    QCOMPARE(bf16["settings"].toObject()["activations"].toString(), QString("formula"));
    QVERIFY(rankBytes(bf16, "activations") < rankBytes(fp32, "activations"));
    QVERIFY(bf16["total_bytes"].toDouble() < fp32["total_bytes"].toDouble());
    QVERIFY(rankBytes(bf16, "activations") < 0.6 * rankBytes(fp32, "activations"));
    const QJsonObject engine = estimateJson({"--model", "gpt-tiny", "--activations", "shardscope"});
    const QJsonObject gpu = estimateJson({"--model", "gpt-tiny"});
    QCOMPARE(engine["settings"].toObject()["activations"].toString(), QString("shardscope"));
    QCOMPARE(gpu["settings"].toObject()["activations"].toString(), QString("formula"));
    QVERIFY(engine["ranks"].toArray()[0].toObject()["formulas"].toObject()["activations"].toString().contains(
        "Activations::total_floats"));
    // Selective recompute is a GPU framework's lever, open now by default.
    QVERIFY(run_cli({"estimate", "--model", "gpt-tiny", "--checkpoint", "selective"}).code == 0);
  }

  // Parameters + gradients + optimizer states: a line of the table and a field of --json.
  void modelStatesSubtotal() {
    const QJsonObject e = estimateJson({"--model", "gpt3-175b", "--precision", "bf16", "--dp", "8", "--zero", "1"});
    const QJsonObject rank = e["ranks"].toArray()[0].toObject();
    const double states = rankBytes(e, "parameters") + rankBytes(e, "gradients") + rankBytes(e, "optimizer_states");
    QCOMPARE(rank["model_states_bytes"].toDouble(), states);
    const CliResult r = run_cli({"estimate", "--model", "gpt3-175b"});  // fp32, one GPU: 16Ψ, the seed's 2.8 TB
    QVERIFY2(
        r.out.contains(
            "  = model states    2,793,668,149,248   2.79 TB  subtotal: parameters + gradients + optimizer_states"),
        qPrintable(r.out));
  }

  // The time model is the kernel model unless --time-model flat (or an --efficiency alone, the flat
  // model's only number) is given; the kernel model prints its parts and its sustained clock, and
  // refuses an --efficiency beside --time-model kernels by both flags' names.
  void kernelTimeModelByDefaultFlatOneFlagAway() {
    const QStringList h100 = {"--model", "gpt2-124m", "--precision", "bf16", "--dp", "8", "--gpu", "H100"};
    const QJsonObject kernels = estimateJson(h100);
    QCOMPARE(kernels["settings"].toObject()["efficiency"].toString(), QString("kernels"));
    QCOMPARE(kernels["time"].toObject()["sustained_clock"].toDouble(), 1575.0 / 1980);
    QVERIFY(kernels["time"].toObject()["dp_exposed_s"].toDouble() < kernels["time"].toObject()["dp_comm_s"].toDouble());
    QCOMPARE(estimateJson(h100 + QStringList{"--time-model", "kernels"}), kernels);
    const QJsonObject flat = estimateJson(h100 + QStringList{"--time-model", "flat"});
    QCOMPARE(flat["time"].toObject()["efficiency"].toDouble(), 0.5);
    QVERIFY(!flat["time"].toObject().contains("gemm_s"));
    const QJsonObject assumed = estimateJson(h100 + QStringList{"--efficiency", "0.4"});
    QCOMPARE(assumed["settings"].toObject()["efficiency"].toDouble(), static_cast<double>(0.4f));  // read as a float
    QVERIFY(!assumed["time"].toObject().contains("gemm_s"));
    const CliResult refused = run_cli(
        {"estimate", "--model", "gpt2-124m", "--gpu", "H100", "--time-model", "kernels", "--efficiency", "0.4"});
    QCOMPARE(refused.code, 2);
    QVERIFY2(refused.err.contains("--efficiency 0.4 is the flat time model's one assumption; --time-model kernels"),
             qPrintable(refused.err));
  }
};

QTEST_GUILESS_MAIN(TestEstimateDefaults)
#include "test_estimate_defaults.moc"
