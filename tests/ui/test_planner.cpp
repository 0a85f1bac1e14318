// SPDX-License-Identifier: GPL-3.0-or-later
// The memory planner, offscreen: GPT-3 175B's model states on one GPU (the
// seed's 2.8 TB), per-GPU bytes per ZeRO stage as compute_estimate gives them,
// imports (DeepSpeed JSON, accelerate YAML, config.json) setting the controls,
// bad files named by file and key with the previous plan kept, sliders that
// re-plan, Chinese labels, the File menu, and screenshots at 1280×720.
#include <sys/stat.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "config/run_schema.h"
#include "estimate/formula_text.h"
#include "i18n.h"
#include "main_window.h"
#include "planner/planner_bars.h"
#include "planner/planner_dialog.h"
#include "ui/planner_test_support.h"

using namespace shardscope;
using shardscope::ui::PlannerDialog;
using namespace shardscope::planner_test;

namespace {

std::int64_t modelStates(const RankMemory& r) {
  return r.bytes[MemoryCategory::parameters] + r.bytes[MemoryCategory::gradients] +
         r.bytes[MemoryCategory::optimizer_states];
}

// Two significant digits, as the seed writes them: 698.4 GB -> 7.0e11.
double twoDigits(std::int64_t bytes) {
  const double scale = std::pow(10.0, std::floor(std::log10(static_cast<double>(bytes))) - 1);
  return std::round(static_cast<double>(bytes) / scale) * scale;
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(text);
  return path;
}

}  // namespace

class TestPlanner : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { ui::setLanguage(QStringLiteral("en")); }

  // Seed chapter 3: GPT-3 175B in fp32 with Adam holds 700 GB of parameters,
  // 700 GB of gradients and 1400 GB of Adam moments: 2.8 TB, on one GPU.
  void gpt3ModelStatesOnOneGpu() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.model().label.startsWith(QStringLiteral("GPT-3 175B")));
    QCOMPARE(planner.settings().layout.dp(), 1);
    QCOMPARE(planner.settings().precision, Precision::fp32);
    QCOMPARE(planner.settings().zero_stage, 0);
    const std::int64_t psi = planner.model().shape.parameters();
    QCOMPARE(twoDigits(psi), 1.7e11);  // 174.6 billion: GPT-3's "175B"
    const RankMemory* r = planner.stages()[0].fullest();
    QVERIFY(r != nullptr);
    QCOMPARE(r->bytes[MemoryCategory::parameters], 4 * psi);
    QCOMPARE(r->bytes[MemoryCategory::gradients], 4 * psi);
    QCOMPARE(r->bytes[MemoryCategory::optimizer_states], 8 * psi);
    QCOMPARE(twoDigits(r->bytes[MemoryCategory::parameters]), 7.0e11);         // 700 GB
    QCOMPARE(twoDigits(r->bytes[MemoryCategory::gradients]), 7.0e11);          // 700 GB
    QCOMPARE(twoDigits(r->bytes[MemoryCategory::optimizer_states]), 1.4e12);  // 1400 GB
    QCOMPARE(twoDigits(modelStates(*r)), 2.8e12);                              // 2.8 TB
    QCOMPARE(r->bytes.bytes, engineEstimate(planner, 0).memory.ranks[0].bytes.bytes);
    // Shown: the bar, the model-states line with its parts, the formula, the verdict.
    QCOMPARE(planner.bars()->bars()[0].bytes.bytes, r->bytes.bytes);
    const QString states = planner.modelStatesText();
    QVERIFY2(states.contains(QString::fromStdString(decimal_bytes(static_cast<double>(modelStates(*r))))) &&
                 states.contains(QStringLiteral("698 GB")) && states.contains(QStringLiteral("1.40 TB")),
             qPrintable(states));
    QVERIFY(planner.formulaHtml().contains(QStringLiteral("4Ψ = 4 × 174,604,259,328")));
    QVERIFY(planner.formulaHtml().contains(QStringLiteral("8Ψ = 8 × 174,604,259,328")));
    // Hovering the optimizer-states segment of the ZeRO-0 bar names its formula.
    const auto& bars = planner.bars()->bars();
    QVERIFY(bars[0].formulas[static_cast<std::size_t>(MemoryCategory::optimizer_states)].startsWith(QStringLiteral("8Ψ")));
    planner.resize(1280, 720);
    planner.show();
    bool found = false;
    for (int y = 0; y < planner.bars()->height() && !found; y += 2)
      for (int x = 0; x < planner.bars()->width() / 3 && !found; x += 4)
        found = planner.bars()->toolTipAt({x, y}).contains(QStringLiteral("8Ψ = 8 × 174,604,259,328"));
    QVERIFY(found);
    QVERIFY2(planner.verdictText().contains(QStringLiteral("does not fit by")), qPrintable(planner.verdictText()));
    QVERIFY(!planner.bars()->bars()[0].fits);
  }

  // The controls are the schema's rows on the planner surface (config/run_schema.h):
  // their ranges and items are the rows', the same as estimate's flags.
  void controlsComeFromTheSchemasRows() {
    PlannerDialog planner;
    const auto row = [](std::string_view key) { return field_on(*find_schema_field(key), surface::planner); };
    const std::pair<QSpinBox*, std::string_view> boxes[] = {
        {planner.dpBox(), "dp"},      {planner.ppBox(), "pp"},
        {planner.zeroBox(), "zero"},  {planner.microBatchBox(), "micro_batch"},
        {planner.seqBox(), "seq"},    {planner.gpusPerNodeBox(), "gpus_per_node"},
        {planner.nodesBox(), "nodes"}};
    for (const auto& [box, key] : boxes) {
      QCOMPARE(box->minimum(), static_cast<int>(row(key).min));
      QCOMPARE(box->maximum(), static_cast<int>(row(key).max));
    }
    QCOMPARE(planner.dpBox()->maximum(), 1'000'000);  // a planner's range, not a run's 64
    QCOMPARE(planner.checkpointBox()->count(), static_cast<int>(row("checkpoint").choices.size()));
    QCOMPARE(planner.precisionBox()->count(), static_cast<int>(row("precision").choices.size()));
    QCOMPARE(planner.gpuBox()->count(), static_cast<int>(row("gpu_profile").choices.size()));
  }

  // 1024 A100s (128 nodes × 8): dp follows, and each stage's per-GPU bytes are
  // the estimator's, shrinking ZeRO-0 > 1 > 2 > 3 as Ψ/Nd says.
  void zeroStagesShrinkWithDataParallelRanks() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.nodesBox()->setValue(128);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.dpBox()->value(), 1024);
    QCOMPARE(planner.request().gpu->name, std::string("A100-80GB"));
    std::int64_t previous = 0;
    for (int stage = 0; stage <= 3; ++stage) {
      const Estimate e = engineEstimate(planner, stage);
      const RankMemory& expected = e.memory.ranks[static_cast<std::size_t>(e.memory.fullest_rank())];
      const RankMemory* shown = planner.stages()[static_cast<std::size_t>(stage)].fullest();
      QVERIFY(shown != nullptr);
      QCOMPARE(shown->bytes.bytes, expected.bytes.bytes);
      QCOMPARE(planner.bars()->bars()[static_cast<std::size_t>(stage)].bytes.bytes, expected.bytes.bytes);
      QVERIFY(planner.formulaHtml().contains(QString::fromStdString(expected.formula(MemoryCategory::optimizer_states))
                                                 .toHtmlEscaped()));
      if (stage > 0) QVERIFY(modelStates(*shown) < previous);
      previous = modelStates(*shown);
    }
    const std::int64_t psi = planner.model().shape.parameters();
    const RankMemory& z3 = *planner.stages()[3].fullest();
    QVERIFY(std::llabs(z3.bytes[MemoryCategory::parameters] - 4 * psi / 1024) <= 4);  // 4Ψ/Nd, shards of ceil(Ψ/Nd)
    QVERIFY(planner.formulaHtml().contains(QStringLiteral("12Ψ/Nd")) == false);      // fp32: 4 + 4 + 8
    // The verdict is the chosen stage's, with the engine's largest lever first.
    planner.zeroBox()->setValue(3);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    const Estimate e3 = engineEstimate(planner, 3);
    QCOMPARE(planner.verdictText().contains(QStringLiteral("does not fit")), !e3.fit.fits);
    if (!e3.fit.levers.empty())
      QVERIFY2(planner.verdictText().contains(ui::PlannerText::lever(e3.fit.levers[0])), qPrintable(planner.verdictText()));
    QCOMPARE(planner.bars()->selected(), 3);
  }

  // 256 nodes × 8 GPUs: estimating 2048 ranks per stage, four stages and their
  // levers, runs on the planner's worker (16384 GPUs take seconds); the window
  // goes on at once and shows the plan when it is done.
  void largeClusterPlansOffTheWindowThread() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.nodesBox()->setValue(256);
    QElapsedTimer clock;
    clock.start();
    planner.replan();
    QVERIFY(clock.elapsed() < 200);
    QVERIFY(planner.planning());
    QVERIFY(planner.waitForPlan());
    QVERIFY(!planner.planning());
    QCOMPARE(planner.dpBox()->value(), 2048);
    QVERIFY(planner.stages()[3].estimate.has_value());
    QCOMPARE(planner.stages()[3].estimate->settings.layout.dp(), 2048);
    QCOMPARE(static_cast<int>(planner.stages()[3].estimate->memory.ranks.size()), 2048);
  }

  void deepSpeedJsonSetsZeroAndMicroBatch() {
    QTemporaryDir dir;
    const QString ds = writeFile(dir, QStringLiteral("ds.json"),
                                 R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                                     "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})");
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.nodesBox()->setValue(8);  // 64 GPUs
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY2(planner.importFiles({ds}), qPrintable(planner.errorText()));
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.zeroBox()->value(), 2);
    QCOMPARE(planner.microBatchBox()->value(), 4);
    QCOMPARE(planner.microBatchSlider()->value(), 4);
    QCOMPARE(planner.settings().precision, Precision::bf16);
    QCOMPARE(planner.settings().accum, 2);
    QCOMPARE(planner.settings().layout.dp(), 64);
    QVERIFY(planner.errorText().isEmpty());
    QCOMPARE(planner.stages()[2].fullest()->bytes.bytes,
             engineEstimate(planner, 2).memory.ranks[0].bytes.bytes);
    QVERIFY(planner.formulaHtml().contains(QStringLiteral("ds.json: zero_optimization.stage")));
  }

  // An import's note ("zero from ds.json: ...") holds until the user changes that
  // setting; then it says it was overridden, and holds again at the file's value.
  void importNotesSayWhenOverridden() {
    QTemporaryDir dir;
    const QString ds = writeFile(dir, QStringLiteral("ds.json"),
                                 R"({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}})");
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    QVERIFY2(planner.importFiles({ds}), qPrintable(planner.errorText()));
    QVERIFY(planner.waitForPlan());
    const QString zero = QStringLiteral("ds.json: zero_optimization.stage");
    const QString micro = QStringLiteral("ds.json: train_micro_batch_size_per_gpu");
    const QString overridden = QStringLiteral(", overridden here");
    QVERIFY2(planner.formulaHtml().contains(zero + QStringLiteral("</li>")), qPrintable(planner.formulaHtml()));
    QVERIFY(planner.formulaHtml().contains(micro + QStringLiteral("</li>")));
    QVERIFY(!planner.formulaHtml().contains(overridden));
    planner.microBatchSlider()->setValue(8);
    QTRY_VERIFY(planner.formulaHtml().contains(micro + overridden));
    QVERIFY2(planner.formulaHtml().contains(zero + QStringLiteral("</li>")), qPrintable(planner.formulaHtml()));
    planner.zeroBox()->setValue(3);
    QTRY_VERIFY(planner.formulaHtml().contains(zero + overridden));
    ui::setLanguage(QStringLiteral("zh_CN"));
    QTRY_VERIFY2(planner.formulaHtml().contains(zero + QStringLiteral("，已在此处覆盖")), qPrintable(planner.formulaHtml()));
    ui::setLanguage(QStringLiteral("en"));
    planner.zeroBox()->setValue(2);  // the file's value again: the note holds
    QTRY_VERIFY(planner.formulaHtml().contains(zero + QStringLiteral("</li>")));
    QVERIFY(planner.formulaHtml().contains(micro + overridden));
  }

  void accelerateYamlAndModelConfigImportTogether() {
    QTemporaryDir dir;
    const QString yaml = writeFile(dir, QStringLiteral("accelerate.yaml"),
                                   "distributed_type: DEEPSPEED\nnum_machines: 2\nnum_processes: 16\n"
                                   "mixed_precision: bf16\ndeepspeed_config:\n  zero_stage: 3\n");
    const QString model = QStringLiteral(SHARDSCOPE_FIXTURES "/../fuzz/corpus/hf_config/llama_2_7b.json");
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    QVERIFY2(planner.importFiles({yaml, model}), qPrintable(planner.errorText()));
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.nodesBox()->value(), 2);
    QCOMPARE(planner.gpusPerNodeBox()->value(), 8);
    QCOMPARE(planner.dpBox()->value(), 16);
    QCOMPARE(planner.zeroBox()->value(), 3);
    QCOMPARE(planner.model().shape.parameters(), load_model_shape(model.toStdString(), nullptr).parameters());
    QCOMPARE(planner.seqBox()->value(), 4096);  // the model's max_position_embeddings
    QCOMPARE(planner.modelBox()->currentText(), model);
    QCOMPARE(planner.stages()[3].fullest()->bytes.bytes, engineEstimate(planner, 3).memory.ranks[0].bytes.bytes);
  }

  // A bad file: the engine's message names the file and key; the plan stays.
  void badConfigNamesFileAndKeyAndKeepsThePlan() {
    QTemporaryDir dir;
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    const auto before = barBytes(planner);
    const int zero = planner.zeroBox()->value();
    const QString ds = writeFile(dir, QStringLiteral("bad_ds.json"), R"({"zero_optimization": {"stage": 7}})");
    QVERIFY(!planner.importFiles({ds}));
    QVERIFY2(planner.errorText().contains(QStringLiteral("bad_ds.json")) &&
                 planner.errorText().contains(QStringLiteral("zero_optimization.stage")),
             qPrintable(planner.errorText()));
    QCOMPARE(barBytes(planner), before);
    QCOMPARE(planner.zeroBox()->value(), zero);
    QVERIFY(planner.model().label.startsWith(QStringLiteral("GPT-3")));

    const QString hf = writeFile(dir, QStringLiteral("config.json"),
                                 R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                                     "n_head": 12})");
    QVERIFY(!planner.importFiles({hf}));
    QVERIFY2(planner.errorText().contains(QStringLiteral("config.json")) &&
                 planner.errorText().contains(QStringLiteral("n_layer")),
             qPrintable(planner.errorText()));
    QCOMPARE(barBytes(planner), before);

    // A FIFO is refused at once (the engine's input check), never waited on.
    const QString fifo = dir.filePath(QStringLiteral("pipe.json"));
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!planner.importFiles({fifo}));
    QVERIFY(clock.elapsed() < 5000);
    QVERIFY2(planner.errorText().contains(QStringLiteral("FIFO")), qPrintable(planner.errorText()));
    QCOMPARE(barBytes(planner), before);
    // A good change afterwards plans again and clears the error.
    planner.microBatchBox()->setValue(2);
    QTRY_VERIFY(planner.errorText().isEmpty());
  }

  void sliderChangesTheBars() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.show();
    const auto before = barBytes(planner);
    planner.microBatchSlider()->setValue(8);
    QCOMPARE(planner.microBatchBox()->value(), 8);
    QTRY_VERIFY(barBytes(planner) != before);  // after the debounce, without a call
    const auto after = barBytes(planner);
    QVERIFY(after[0][kActivations] > before[0][kActivations]);
    QCOMPARE(after[0][kParameters], before[0][kParameters]);
    QCOMPARE(planner.stages()[0].fullest()->bytes.bytes, engineEstimate(planner, 0).memory.ranks[0].bytes.bytes);
    // Checkpointing lowers the activations; the sequence slider too.
    planner.checkpointBox()->setCurrentIndex(2);
    QTRY_VERIFY(barBytes(planner)[0][kActivations] < after[0][kActivations]);
    const auto checkpointed = barBytes(planner);
    planner.seqSlider()->setValue(1024);
    QCOMPARE(planner.seqBox()->value(), 1024);
    QTRY_VERIFY(barBytes(planner)[0][kActivations] < checkpointed[0][kActivations]);
  }

  // GPU conventions by default (issue 28): activations as GPU frameworks keep them, 16-bit under
  // bf16, so GPT-3 in bf16 needs less than in fp32 (the model states are 16Ψ in both); the
  // engine's exact fp32 CPU activations are one choice away and equal in both precisions.
  void bf16Gpt3NeedsLessThanFp32() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    auto* precision = planner.findChild<QComboBox*>(QStringLiteral("plannerPrecision"));
    auto* activations = planner.findChild<QComboBox*>(QStringLiteral("plannerActivations"));
    QCOMPARE(planner.settings().activations, ActivationMode::formula);
    const auto fullest = [&](Precision p, ActivationMode mode) {
      activations->setCurrentIndex(activations->findData(static_cast<int>(mode)));
      precision->setCurrentIndex(precision->findData(static_cast<int>(p)));
      planner.replan();
      const bool planned = planner.waitForPlan();
      const bool as_asked = planner.settings().precision == p && planner.settings().activations == mode;
      return planned && as_asked && planner.stages()[0].fullest() ? *planner.stages()[0].fullest() : RankMemory{};
    };
    const RankMemory fp32 = fullest(Precision::fp32, ActivationMode::formula);
    const RankMemory bf16 = fullest(Precision::bf16, ActivationMode::formula);
    QVERIFY(fp32.total() > 0 && bf16.total() > 0);
    QVERIFY2(bf16.total() < fp32.total(),
             qPrintable(QStringLiteral("bf16 %1 B, fp32 %2 B").arg(bf16.total()).arg(fp32.total())));
    QCOMPARE(bf16.model_states(), fp32.model_states());  // 2 + 2 + 12 = 4 + 4 + 8 bytes per parameter
    const RankMemory engine_fp32 = fullest(Precision::fp32, ActivationMode::shardscope);
    const RankMemory engine_bf16 = fullest(Precision::bf16, ActivationMode::shardscope);
    QVERIFY(engine_fp32.total() > 0 && engine_bf16.total() > 0);
    QCOMPARE(engine_bf16.bytes[MemoryCategory::activations], engine_fp32.bytes[MemoryCategory::activations]);
  }

  // GPT-3 on 1024 GPUs with checkpointing: ZeRO-0 holds terabytes, ZeRO-3 some 17 GB, a sliver of
  // that axis. The chosen stage's bar is drawn again in a zoom, tall, with its parts on hover.
  void chosenBarIsZoomedWhenTheAxisSpansTerabytes() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.resize(1280, 720);
    planner.show();
    QVERIFY(!planner.bars()->zoomed());  // one GPU: every bar is terabytes
    planner.nodesBox()->setValue(128);
    planner.zeroBox()->setValue(3);
    planner.checkpointBox()->setCurrentIndex(2);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    const auto& bars = planner.bars()->bars();
    QVERIFY(bars[3].bytes.total() * 8 < bars[0].bytes.total());
    QVERIFY(planner.bars()->zoomed());
    const QRect zoom = planner.bars()->zoomedBarRect();
    QVERIFY2(zoom.height() > planner.bars()->height() / 3, qPrintable(QString::number(zoom.height())));
    QVERIFY(zoom.right() < planner.bars()->width());
    const QString tip = planner.bars()->toolTipAt(zoom.center());
    QVERIFY2(tip.startsWith(QStringLiteral("ZeRO-3 · ")), qPrintable(tip));
    planner.zeroBox()->setValue(0);  // the chosen bar fills the axis: no zoom
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY(!planner.bars()->zoomed());
  }

  void examplesAreOneClickAway() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.findChild<QPushButton*>(QStringLiteral("exampleLlama"))->click();
    QVERIFY(planner.model().label.startsWith(QStringLiteral("Llama-2-7B")));
    const QString llama = QStringLiteral(SHARDSCOPE_FIXTURES "/../fuzz/corpus/hf_config/llama_2_7b.json");
    QCOMPARE(planner.model().shape.parameters(), load_model_shape(llama.toStdString(), nullptr).parameters());
    QCOMPARE(planner.seqBox()->value(), 4096);
    planner.findChild<QPushButton*>(QStringLiteral("exampleGpt3"))->click();
    QVERIFY(planner.model().label.startsWith(QStringLiteral("GPT-3 175B")));
    QCOMPARE(planner.seqBox()->value(), 2048);
  }

  // Issue 29 item 7: the papers' tensor-parallel layouts are one click away, planned by the
  // engine's estimator (tp and sequence parallelism from the schema's rows).
  void tensorParallelLayoutsAreOneClickAway() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.resize(1280, 720);
    planner.show();
    planner.gpt3LayoutButton()->click();
    QVERIFY(planner.waitForPlan());
    EstimateSettings s = planner.settings();
    QVERIFY(s.layout.tp() == 8 && s.layout.pp() == 8 && s.layout.dp() == 16 && s.micro_batches == 96);
    QCOMPARE(s.global_batch(), std::int64_t{1536});
    QCOMPARE(planner.nodesBox()->value() * planner.gpusPerNodeBox()->value(), 1024);
    const QString note = planner.findChild<QLabel*>(QStringLiteral("clusterNote"))->text();
    QVERIFY2(note.contains(QStringLiteral("dp 16 × pp 8 × tp 8 = 1024 GPUs")), qPrintable(note));
    const RankMemory* r = planner.stages()[0].fullest();
    QVERIFY(r != nullptr);
    QCOMPARE(r->bytes.bytes, engineEstimate(planner, 0).memory.ranks[static_cast<std::size_t>(r->rank)].bytes.bytes);
    QVERIFY(planner.bars()->bars()[0].fits);  // one 8-GPU node per tp group: 55.8 GB on an 80 GB A100
    QVERIFY(planner.formulaHtml().contains(QStringLiteral("Ψ_s/t")));
    const std::int64_t tp_activations = r->bytes[MemoryCategory::activations];
    planner.sequenceParallelBox()->setChecked(true);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.settings().sequence_parallel);
    QVERIFY(planner.stages()[0].fullest()->bytes[MemoryCategory::activations] < tp_activations);

    planner.llama70bLayoutButton()->click();
    QVERIFY(planner.waitForPlan());
    s = planner.settings();
    QVERIFY(s.layout.tp() == 8 && s.world_size() == 8 && s.precision == Precision::bf16);
    QVERIFY(planner.model().label.startsWith(QStringLiteral("Llama-2-70B")));
    QVERIFY2(planner.formulaHtml().contains(QStringLiteral("sbh(10 + 24/t + 5as/(ht)), t=8")),
             qPrintable(planner.formulaHtml()));
    QTest::qWait(50);
    QCOMPARE(planner.size(), QSize(1280, 720));
    const QString shot = shotPath(QStringLiteral("planner_llama70b_tp8_en.png"));
    QVERIFY(planner.grab().save(shot));
    qInfo("screenshot: %s", qPrintable(shot));
  }

  void chineseLabelsAfterSwitching() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.show();
    QVERIFY(ui::setLanguage(QStringLiteral("zh_CN")));
    QTRY_COMPARE(planner.windowTitle(), QStringLiteral("显存规划器"));
    QVERIFY(planner.waitForPlan());
    QStringList labels;
    for (const QLabel* l : planner.findChildren<QLabel*>()) labels << l->text();
    QVERIFY2(labels.contains(QStringLiteral("ZeRO 阶段")), qPrintable(labels.join(QStringLiteral(" | "))));
    QVERIFY2(labels.contains(QStringLiteral("每卡微批大小")), qPrintable(labels.join(QStringLiteral(" | "))));
    QVERIFY2(planner.verdictText().contains(QStringLiteral("放不下")), qPrintable(planner.verdictText()));
    QVERIFY2(planner.modelStatesText().contains(QStringLiteral("模型状态")), qPrintable(planner.modelStatesText()));
    QVERIFY(planner.model().label.contains(QStringLiteral("示例")));
    QVERIFY(ui::setLanguage(QStringLiteral("en")));
    QTRY_COMPARE(planner.windowTitle(), QStringLiteral("Memory planner"));
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.verdictText().contains(QStringLiteral("does not fit")));
  }

  // File → Plan memory… opens it beside the window, whose minimum size stays.
  void fileMenuOpensThePlanner() {
    ui::MainWindow window;
    window.show();
    const QSize minimum = window.minimumSizeHint();
    QVERIFY(window.planAction() != nullptr && window.importConfigAction() != nullptr);
    window.planAction()->trigger();
    QTRY_VERIFY(window.planner()->isVisible());
    QCOMPARE(window.minimumSizeHint(), minimum);
    QVERIFY(window.planner()->minimumSizeHint().width() <= 1280);
    QVERIFY(window.planner()->minimumSizeHint().height() <= 720);
  }

  // GPT-3 175B on 1024 × A100-80GB, checkpointing, ZeRO-0..3 and the zoom: look at these (nothing clipped).
  void screenshots() {
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(ui::setLanguage(language));
      PlannerDialog planner;
      QVERIFY(planner.waitForPlan());
      planner.resize(1280, 720);
      planner.show();
      planner.nodesBox()->setValue(128);
      planner.zeroBox()->setValue(3);
      planner.checkpointBox()->setCurrentIndex(2);
      planner.replan();
      QVERIFY(planner.waitForPlan());
      QTest::qWait(50);
      QCOMPARE(planner.size(), QSize(1280, 720));
      const QString shot = shotPath(QStringLiteral("planner_gpt3_1024xA100_%1.png").arg(language));
      QVERIFY(planner.grab().save(shot));
      qInfo("screenshot: %s", qPrintable(shot));
    }
  }
};

QTEST_MAIN(TestPlanner)
#include "test_planner.moc"
