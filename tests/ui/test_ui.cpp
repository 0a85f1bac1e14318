// SPDX-License-Identifier: GPL-3.0-or-later
// The desktop app, offscreen: the config panel builds the CLI's run config,
// invalid settings disable Run with the reason, a short run from the window
// fills the loss plot and the memory bars from engine events, Stop is prompt,
// errors are shown.
#include <sys/stat.h>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "config/gpu_profiles.h"
#include "config/run_schema.h"
#include "config_panel.h"
#include "estimate/formula_text.h"
#include "events/recording.h"
#include "i18n.h"
#include "main_window.h"
#include "train/metrics_json.h"
#include "train/trainer.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"

using namespace shardscope;
using shardscope::ui::ConfigPanel;
using shardscope::ui::MainWindow;

class TestUi : public QObject {
  Q_OBJECT

 private:
  static RunConfig shortRun(std::int64_t steps) {
    RunConfig c = ConfigPanel::defaultConfig();
    c.steps = steps;
    c.batch = 8;
    c.seq = 32;
    c.micro_batches = 4;
    c.eval_every = 4;  // held-out loss at step 4 and at the end
    return c;
  }
  static QString tempPath(const QString& name) { return QDir(QCoreApplication::applicationDirPath()).filePath(name); }
  // A small text file to train on (a few ten thousand bytes of words).
  static QString writeCorpus(const QString& name) {
    const QString path = tempPath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return path;
    const char* words[] = {"ring ", "pipeline ", "shard ", "gradient ", "memory ", "rank ", "bubble ", "zero "};
    for (int i = 0; i < 8000; ++i) f.write(words[(i * 7 + i / 3) % 8]);
    return path;
  }

 private Q_SLOTS:
  // File → Save checkpoints: the run's state and Hugging Face weights land in a
  // step folder when it ends; File → Resume: the next run continues from it,
  // and its losses are the uninterrupted run's bit for bit.
  void checkpointsSaveAndResumeFromTheMenu() {
    QTemporaryDir dir;
    RunConfig c = shortRun(3);
    c.layout[Axis::dp] = 1, c.layout[Axis::pp] = 1, c.micro_batches = 1, c.eval_every = 0;
    MainWindow window;
    window.configPanel()->setConfig(c);
    window.setCheckpointDir(dir.path());
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    const QString saved = QString::fromStdString(window.controller()->lastCheckpoint());
    QVERIFY2(saved.endsWith(QStringLiteral("step-000003")), qPrintable(saved));
    for (const char* file : {"manifest.json", "rank-0.safetensors", "config.json", "model.safetensors"})
      QVERIFY2(QFile::exists(saved + QLatin1Char('/') + QLatin1String(file)), file);
    QTRY_VERIFY(window.logText().contains(QStringLiteral("checkpoint: step 3 saved to")));

    QVERIFY(!window.setResumeFrom(dir.path() + QStringLiteral("/nothing-here")));
    QVERIFY2(window.statusText().contains(QStringLiteral("Not a checkpoint")), qPrintable(window.statusText()));
    // A folder whose manifest.json is a FIFO is refused at once (an ifstream would wait for a writer forever).
    const QString fifo_step = dir.path() + QStringLiteral("/fifo/step-000001");
    QVERIFY(QDir().mkpath(fifo_step));
    QCOMPARE(::mkfifo((fifo_step + QStringLiteral("/manifest.json")).toLocal8Bit().constData(), 0600), 0);
    QVERIFY(!window.setResumeFrom(fifo_step));
    QVERIFY2(window.statusText().contains(QStringLiteral("not a regular file")), qPrintable(window.statusText()));
    QVERIFY(window.setResumeFrom(dir.path()));  // the root: its newest step
    QVERIFY2(window.statusText().contains(QStringLiteral("step 3")), qPrintable(window.statusText()));
    c.steps = 5;
    window.configPanel()->setConfig(c);
    window.setCheckpointDir(QString());
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    QCOMPARE(window.lossPlot()->trainPointCount(), 2);  // steps 4 and 5
    // The same save and resume through the engine alone gives the same losses, bit for bit.
    QTemporaryDir again;
    RunConfig first = c;
    first.steps = 3;
    Trainer before(first);
    for (int s = 0; s < 3; ++s) before.step();
    RunConfig second = c;
    second.resume_dir = before.save_checkpoint(again.path().toStdString());
    Trainer after(second);
    for (const auto& [step, loss] : window.lossPlot()->trainPoints())
      QCOMPARE(static_cast<float>(loss), after.step().loss);
  }

  // File → Open config for a run: a DeepSpeed JSON sets the panel (and the
  // settings the panel does not show) as `train --deepspeed` sets a run; the
  // run's losses are those of the same settings given by hand. A refused file
  // names its key and leaves the panel as it was.
  void openRunConfigSetsTheRun() {
    QTemporaryDir dir;
    const QString ds = dir.filePath(QStringLiteral("ds.json"));
    QFile f(ds);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
      "zero_optimization": {"stage": 2, "reduce_bucket_size": 500000},
      "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500,
               "hysteresis": 2, "min_loss_scale": 1},
      "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.05}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 3e-4, "warmup_num_steps": 2}},
      "gradient_clipping": 0.5})");
    f.close();
    RunConfig c = shortRun(2);
    c.layout[Axis::dp] = 2, c.layout[Axis::pp] = 1, c.micro_batches = 1, c.eval_every = 0;
    MainWindow window;
    window.configPanel()->setConfig(c);
    QVERIFY2(window.openRunConfig(ds), qPrintable(window.statusText()));
    const RunConfig shown = window.configPanel()->config();
    QCOMPARE(shown.zero_stage, 2);
    QCOMPARE(shown.accum, 2);
    QCOMPARE(shown.batch, 8);
    QCOMPARE(shown.precision, Precision::fp16);
    QCOMPARE(shown.initial_scale_power, 12);
    for (const char* hidden : {"--grad-clip 0.5", "--warmup 2", "--weight-decay 0.05", "--scale-window 500"})
      QVERIFY2(window.statusText().contains(QLatin1String(hidden)), qPrintable(window.statusText()));

    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    RunConfig byHand = shown;
    const std::vector<std::pair<const char*, nlohmann::json>> settings = {
        {"loss_scaler", "deepspeed"}, {"scale_window", 500}, {"hysteresis", 2}, {"min_loss_scale", 1.0},
        {"lr", 3e-4}, {"adam_beta2", 0.95}, {"weight_decay", 0.05}, {"warmup", 2}, {"min_lr_ratio", 1.0},
        {"grad_clip", 0.5}};
    for (const auto& [key, value] : settings) set_field(byHand, run_field(key), value);
    Trainer trainer(byHand);
    const auto points = window.lossPlot()->trainPoints();
    QCOMPARE(static_cast<int>(points.size()), 2);
    for (const auto& [step, loss] : points) QCOMPARE(static_cast<float>(loss), trainer.step().loss);

    QFile bad(dir.filePath(QStringLiteral("offload.json")));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})");
    bad.close();
    QVERIFY(!window.openRunConfig(bad.fileName()));
    QVERIFY2(window.statusText().contains(QStringLiteral("offload_optimizer")), qPrintable(window.statusText()));
    QCOMPARE(window.configPanel()->config().zero_stage, 2);  // as the first file left it
  }

  void defaultPresetIsReady() {
    MainWindow window;
    const RunConfig c = window.configPanel()->config();
    QCOMPARE(c.model, std::string("gpt-tiny"));
    QCOMPARE(c.layout.dp(), 2);
    QCOMPARE(c.layout.pp(), 2);
    QCOMPARE(c.micro_batches, 4);
    QCOMPARE(c.batch, 16);
    QCOMPARE(c.seq, 64);
    QVERIFY(c.schedule == PipelineScheduleKind::one_f_one_b);
    QVERIFY(c.dp_mode == DataParallelMode::ddp);
    QVERIFY(window.configPanel()->problem().isEmpty());
    QVERIFY(window.runButton()->isEnabled());
    QVERIFY(!window.stopButton()->isEnabled());
    QCOMPARE(window.memoryBars()->rankCount(), 4);
  }

  void panelMatchesCli() {
    ConfigPanel panel;
    panel.findChild<QComboBox*>(QStringLiteral("model"))->setCurrentText(QStringLiteral("gpt-tiny"));
    panel.findChild<QSpinBox*>(QStringLiteral("steps"))->setValue(1);
    panel.findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(8);
    panel.findChild<QSpinBox*>(QStringLiteral("seq"))->setValue(32);
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("lr"))->setValue(0.002);
    panel.findChild<QSpinBox*>(QStringLiteral("dp"))->setValue(2);
    panel.findChild<QSpinBox*>(QStringLiteral("pp"))->setValue(2);
    auto* mode = panel.findChild<QComboBox*>(QStringLiteral("dp_mode"));
    mode->setCurrentIndex(mode->findData(QStringLiteral("ddp")));
    panel.findChild<QSpinBox*>(QStringLiteral("zero"))->setValue(1);
    auto* schedule = panel.findChild<QComboBox*>(QStringLiteral("schedule"));
    schedule->setCurrentIndex(schedule->findData(QStringLiteral("gpipe")));
    panel.findChild<QSpinBox*>(QStringLiteral("micro_batches"))->setValue(2);
    panel.findChild<QSpinBox*>(QStringLiteral("accum"))->setValue(2);
    panel.findChild<QCheckBox*>(QStringLiteral("checkpoint"))->setChecked(true);
    auto* precision = panel.findChild<QComboBox*>(QStringLiteral("precision"));
    precision->setCurrentIndex(precision->findData(QStringLiteral("fp16")));
    auto* scalePower = panel.findChild<QSpinBox*>(QStringLiteral("initial_scale_power"));
    QVERIFY(scalePower->isEnabled());  // fp16 scales the loss
    scalePower->setValue(12);
    panel.findChild<QSpinBox*>(QStringLiteral("eval_every"))->setValue(3);
    const QString corpus = writeCorpus(QStringLiteral("test_ui_corpus.txt"));
    panel.findChild<QLineEdit*>(QStringLiteral("data"))->setText(corpus);
    QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));

    // The CLI with the same choices records its run config in the recording's header.
    const QString record = tempPath(QStringLiteral("test_ui_cli.ssrun"));
    QFile::remove(record);
    QProcess cli;
    cli.start(QStringLiteral(SHARDSCOPE_CLI), {"train",    "--model",
                                               "gpt-tiny", "--steps",
                                               "1",        "--batch",
                                               "8",        "--seq",
                                               "32",       "--lr",
                                               "0.002",    "--dp",
                                               "2",        "--pp",
                                               "2",        "--dp-mode",
                                               "ddp",      "--zero",
                                               "1",        "--schedule",
                                               "gpipe",    "--micro-batches",
                                               "2",        "--accum",
                                               "2",        "--checkpoint",
                                               "full",     "--precision",
                                               "fp16",     "--initial-scale-power",
                                               "12",       "--eval-every",
                                               "3",        "--data",
                                               corpus,     "--record",
                                               record});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    RecordingReader reader;
    reader.open(record.toStdString());
    const auto fromCli = nlohmann::json::parse(reader.metadata_json());
    const auto fromPanel = run_config_to_json(panel.config());
    QVERIFY2(fromCli == fromPanel, (fromCli.dump() + "\n != \n" + fromPanel.dump()).c_str());
    QVERIFY(panel.config().checkpoint);
    QVERIFY(panel.config().schedule == PipelineScheduleKind::gpipe);
    QCOMPARE(panel.config().zero_stage, 1);
    QVERIFY(panel.config().precision == Precision::fp16);
    QCOMPARE(panel.config().data, corpus.toStdString());
    // Back to the defaults: an empty data field is the shipped corpus, fp32.
    panel.findChild<QLineEdit*>(QStringLiteral("data"))->clear();
    precision->setCurrentIndex(precision->findData(QStringLiteral("bf16")));
    QVERIFY(panel.config().data.empty());
    QVERIFY(panel.config().precision == Precision::bf16);
    QVERIFY(!scalePower->isEnabled());  // bf16 runs without a loss scaler
    QCOMPARE(panel.config().initial_scale_power, 16);
    QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
  }

  void unreadableDataFileDisablesRun() {
    MainWindow window;
    auto* data = window.configPanel()->findChild<QLineEdit*>(QStringLiteral("data"));
    QVERIFY(data != nullptr);
    QVERIFY(window.configPanel()->findChild<QPushButton*>(QStringLiteral("browseData")) != nullptr);
    const QString missing = tempPath(QStringLiteral("no_such_corpus.txt"));
    QFile::remove(missing);
    data->setText(missing);
    QVERIFY2(window.configPanel()->problem().contains(missing), qPrintable(window.configPanel()->problem()));
    QVERIFY(!window.runButton()->isEnabled());
    auto* label = window.configPanel()->findChild<QLabel*>(QStringLiteral("problem"));
    QVERIFY(!label->isHidden());
    QVERIFY(label->text().contains(missing));
    // A directory is not a readable text file either.
    data->setText(QCoreApplication::applicationDirPath());
    QVERIFY(window.configPanel()->problem().contains(QStringLiteral("cannot be read")));
    QVERIFY(!window.runButton()->isEnabled());
    data->setText(writeCorpus(QStringLiteral("test_ui_corpus2.txt")));
    QVERIFY(window.configPanel()->problem().isEmpty());
    QVERIFY(window.runButton()->isEnabled());
  }

  void gpuProfileFitCheck() {
    MainWindow window;
    ConfigPanel* panel = window.configPanel();
    // The run's own field (the virtual clock's GPU), from the schema.
    auto* gpu = panel->findChild<QComboBox*>(QStringLiteral("gpu_profile"));
    QVERIFY(gpu != nullptr);
    QCOMPARE(gpu->itemData(0).toString(), QStringLiteral("none"));  // "none" first
    QCOMPARE(gpu->count(), 1 + static_cast<int>(gpu_profiles().size()));
    QCOMPARE(panel->labelText(QStringLiteral("gpu_profile")), QStringLiteral("GPU profile"));
    QVERIFY(panel->fitText().isEmpty());
    // GPT-2 medium, one rank, 16 x 1024 tokens, fp32: far more than 24 GiB.
    RunConfig big = ConfigPanel::defaultConfig();
    big.model = "gpt2-medium";
    big.layout[Axis::dp] = 1;
    big.layout[Axis::pp] = 1;
    big.micro_batches = 1;
    big.batch = 16;
    big.seq = 1024;
    panel->setConfig(big);
    panel->setGpuProfile(QStringLiteral("RTX4090"));
    QVERIFY2(panel->problem().isEmpty(), qPrintable(panel->problem()));
    QCOMPARE(panel->config().gpu_profile, std::string("RTX4090"));
    const GpuProfile& rtx = find_gpu_profile("RTX4090");
    QVERIFY(panel->predictedBytesPerRank() > rtx.memory_bytes);
    const QString text = panel->fitText();
    QVERIFY2(text.startsWith(QStringLiteral("Does not fit: ")), qPrintable(text));
    const QString predicted = QString::fromStdString(binary_bytes(panel->predictedBytesPerRank()));
    QVERIFY2(predicted.endsWith(QStringLiteral(" GiB")), qPrintable(predicted));
    QVERIFY2(text.contains(predicted + QStringLiteral(" predicted per rank > 24.0 GiB")), qPrintable(text));
    QVERIFY(window.runButton()->isEnabled());  // informational: the run is on the CPU
    // gpt-tiny on an H100 fits, in MiB (not 0.00 GiB); "none" hides the verdict.
    panel->setConfig(ConfigPanel::defaultConfig());
    panel->setGpuProfile(QStringLiteral("H100"));
    QVERIFY2(panel->fitText().startsWith(QStringLiteral("Fits: ")), qPrintable(panel->fitText()));
    QVERIFY2(panel->fitText().contains(QStringLiteral(" MiB predicted per rank ≤ ")), qPrintable(panel->fitText()));
    panel->setGpuProfile(QString());
    QVERIFY(panel->fitText().isEmpty());
  }

  void invalidCombinationDisablesRun() {
    MainWindow window;
    QVERIFY(window.runButton()->isEnabled());
    // 15 sequences cannot be split over 2 data-parallel ranks x 4 micro-batches.
    window.configPanel()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(15);
    const QString problem = window.configPanel()->problem();
    QVERIFY(!problem.isEmpty());
    // In the panel's words: its labels, never the CLI's flags.
    QVERIFY2(problem.contains(QStringLiteral("Global batch 15 does not split into Data-parallel ranks 2")),
             qPrintable(problem));
    QVERIFY2(!problem.contains(QStringLiteral("--")), qPrintable(problem));
    QVERIFY(!window.runButton()->isEnabled());
    QVERIFY(window.runButton()->toolTip().contains(problem));
    auto* label = window.configPanel()->findChild<QLabel*>(QStringLiteral("problem"));
    QVERIFY(label != nullptr);
    QVERIFY(!label->isHidden());
    QVERIFY(label->text().contains(problem));
    // Fixing it enables Run again and hides the reason.
    window.configPanel()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(16);
    QVERIFY(window.configPanel()->problem().isEmpty());
    QVERIFY(window.runButton()->isEnabled());
    QVERIFY(label->isHidden());
  }

  // gpt-tiny's 4 layers over 3 stages split 2/1/1: the panel says so (the
  // bubble line's stage imbalance comes from it); over 2 or 4 it says nothing.
  void unevenStageSplitIsNamed() {
    MainWindow window;
    auto* split = window.configPanel()->findChild<QLabel*>(QStringLiteral("stageSplit"));
    auto* pp = window.configPanel()->findChild<QSpinBox*>(QStringLiteral("pp"));
    QVERIFY(split != nullptr && pp != nullptr);
    QVERIFY(split->isHidden());  // the default dp 2 x pp 2: 2 layers each
    pp->setValue(3);
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QVERIFY(!split->isHidden());
    QVERIFY2(split->text().contains(QStringLiteral("4 layers do not split evenly over 3 stages (2/1/1 layers)")),
             qPrintable(split->text()));
    pp->setValue(4);
    QVERIFY(split->isHidden());
    pp->setValue(3);
    QVERIFY(ui::setLanguage(QStringLiteral("zh_CN")));
    QCoreApplication::processEvents();
    QVERIFY2(split->text().contains(QStringLiteral("2/1/1")) && split->text().contains(QStringLiteral("阶段")),
             qPrintable(split->text()));
    QVERIFY(ui::setLanguage(QStringLiteral("en")));
  }

  // fp16: the prediction is the engine's bytes (fp32 activations included), and
  // the bars say under the title which bytes are 16-bit and which stay fp32.
  void mixedPrecisionRunExplainsThePrediction() {
    MainWindow window;
    window.show();
    RunConfig c = shortRun(2);
    c.precision = Precision::fp16;
    window.configPanel()->setConfig(c);
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(window.memoryBars()->note().contains(QStringLiteral("16-bit")), qPrintable(window.memoryBars()->note()));
    for (int r = 0; r < 4; ++r) {
      const MemoryBytes measured = window.memoryBars()->bytes(r), predicted = window.memoryBars()->predicted(r);
      // The bars show each category's peak, as the prediction does: equal, byte for byte.
      for (MemoryCategory cat : kAllMemoryCategories) QCOMPARE(measured[cat], predicted[cat]);
    }
  }

  void shortRunFillsViews() {
    MainWindow window;
    window.show();
    window.configPanel()->setConfig(shortRun(6));
    QVERIFY(window.runButton()->isEnabled());
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QVERIFY(window.controller()->busy());
    QVERIFY(!window.runButton()->isEnabled());
    QVERIFY(window.stopButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    QCOMPARE(window.lossPlot()->trainPointCount(), 6);
    QCOMPARE(window.lossPlot()->evalPointCount(), 2);  // steps 4 and 6
    QVERIFY(window.memoryBars()->note().isEmpty());    // fp32: the prediction is the engine's exact bytes

    const auto ledger = window.controller()->finalMemory();
    QCOMPARE(static_cast<int>(ledger.size()), 4);
    QCOMPARE(window.memoryBars()->rankCount(), 4);
    for (int r = 0; r < 4; ++r) {
      const MemoryBytes shown = window.memoryBars()->bytes(r);
      QVERIFY(shown[MemoryCategory::parameters] > 0);
      for (MemoryCategory c : kAllMemoryCategories)
        QVERIFY2(shown[c] == ledger[static_cast<std::size_t>(r)][c],
                 qPrintable(QStringLiteral("rank %1 %2: bars %3, ledger %4")
                                .arg(r)
                                .arg(QString::fromLatin1(memory_category_name(c).data()))
                                .arg(shown[c])
                                .arg(ledger[static_cast<std::size_t>(r)][c])));
    }
    // The light bars are the estimator's prediction for this very run: model
    // states are exact, and every category's peak equals the ledger's peak.
    for (int r = 0; r < 4; ++r) {
      const MemoryBytes predicted = window.memoryBars()->predicted(r);
      for (MemoryCategory c : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
        QCOMPARE(predicted[c], ledger[static_cast<std::size_t>(r)][c]);
      QVERIFY(predicted[MemoryCategory::activations] > 0);
    }
    QVERIFY(window.runButton()->isEnabled());
    QVERIFY(!window.stopButton()->isEnabled());
    QVERIFY2(window.statusText().contains(QStringLiteral("6")), qPrintable(window.statusText()));

    const QString shot = tempPath(QStringLiteral("ui_main_window.png"));
    QVERIFY(window.grab().save(shot));
    qInfo("screenshot: %s", qPrintable(shot));
  }

  // Issue 27: a run's config is validated once and its sharding plan built
  // once (plan/run_plan.h); the trainer, the views and the memory prediction
  // share them. Counted from the click on Run to the end of the run.
  void oneValidationAndOnePlanPerRun() {
    MainWindow window;
    RunConfig c = shortRun(2);
    c.eval_every = 0;
    window.configPanel()->setConfig(c);
    QTest::qWait(50);  // the panel's own checks of the edit are done
    for (const bool one_step : {false, true}) {
      const std::int64_t validations = run_config_validations(), plans = sharding_plans_built();
      QTest::mouseClick(one_step ? window.stepButton() : window.runButton(), Qt::LeftButton);
      if (one_step) {
        QTRY_COMPARE_WITH_TIMEOUT(window.lossPlot()->trainPointCount(), 1, 60000);
        QTest::mouseClick(window.stopButton(), Qt::LeftButton);
      }
      QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 60000);
      QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
      QCOMPARE(run_config_validations() - validations, std::int64_t{1});
      QCOMPARE(sharding_plans_built() - plans, std::int64_t{1});
    }
  }

  void stopIsPrompt() {
    MainWindow window;
    window.configPanel()->setConfig(shortRun(100000));
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(window.lossPlot()->trainPointCount() >= 1, 60000);
    QElapsedTimer timer;
    timer.start();
    QTest::mouseClick(window.stopButton(), Qt::LeftButton);
    QVERIFY(timer.elapsed() < 100);  // clicking Stop never waits for the engine
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 10000);
    QVERIFY(timer.elapsed() < 5000);
    QVERIFY(window.lossPlot()->trainPointCount() < 100000);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Stopped")), qPrintable(window.statusText()));
    QVERIFY(window.runButton()->isEnabled());
  }

  void stepOnceRunsOneStep() {
    MainWindow window;
    window.configPanel()->setConfig(shortRun(50));
    QTest::mouseClick(window.stepButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(window.lossPlot()->trainPointCount(), 1, 60000);
    QTest::qWait(300);
    QCOMPARE(window.lossPlot()->trainPointCount(), 1);  // paused after the one step
    QVERIFY(window.controller()->state() == ui::RunController::State::paused);
    QTest::mouseClick(window.stepButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(window.lossPlot()->trainPointCount(), 2, 60000);
    QTest::mouseClick(window.stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 10000);
    QCOMPARE(window.lossPlot()->trainPointCount(), 2);
  }

  void rankFailureIsShown() {
    MainWindow window;
    RunConfig c = shortRun(5);
    c.fail_rank = 1;
    c.fail_step = 2;
    window.controller()->start(make_run_plan(c));
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 60000);
    QVERIFY2(window.logText().contains(QStringLiteral("injected failure")), qPrintable(window.logText()));
    QVERIFY2(window.statusText().contains(QStringLiteral("injected failure")), qPrintable(window.statusText()));
    QCOMPARE(window.lossPlot()->trainPointCount(), 1);
  }

  // The device list: the CPU, each GPU (ranks share it), one rank per GPU with
  // two or more; without GPUs a disabled line says why. The selection becomes
  // --device / --gpus in the RunConfig, and a config's device is selected back.
  void deviceChoiceBecomesDeviceAndGpus() {
    ConfigPanel panel(nullptr, /*probeDevices=*/false);
    auto* device = panel.findChild<QComboBox*>(QStringLiteral("device"));
    QVERIFY(device != nullptr);
    QCOMPARE(panel.labelText(QStringLiteral("device")), QStringLiteral("Device"));
    QCOMPARE(panel.config().device, std::string("cpu"));
    // A saved GPU config before the probe answers: selected once the GPUs are known.
    RunConfig saved = ConfigPanel::defaultConfig();
    saved.device = "cuda";
    saved.gpus = {1};
    panel.setConfig(saved);
    QCOMPARE(panel.config().device, std::string("cpu"));

    DeviceProbe two;
    for (int i = 0; i < 2; ++i) {
      DeviceInfo gpu;
      gpu.kind = DeviceKind::cuda;
      gpu.index = i;
      gpu.name = "NVIDIA H200";
      gpu.total_bytes = std::size_t{150'000'000'000};
      two.gpus.push_back(gpu);
    }
    panel.setDevices(two);
    QCOMPARE(device->count(), 4);
    // 150e9 bytes = 139.7 GiB, written as the engine writes sizes (binary_bytes).
    QCOMPARE(device->itemText(1), QStringLiteral("GPU 0: NVIDIA H200 (140 GiB), all ranks share it"));
    QCOMPARE(panel.config().device, std::string("cuda"));
    QCOMPARE(panel.config().gpus, std::vector<int>{1});

    // Without a profile the fit is checked against the GPU itself: ranks sharing it add up.
    panel.setGpuProfile(QString());
    QVERIFY2(panel.fitText().startsWith(QStringLiteral("Fits: ")) &&
                 panel.fitText().contains(QStringLiteral("for all 4 ranks")) &&
                 panel.fitText().contains(QStringLiteral("GPU 1: NVIDIA H200")),
             qPrintable(panel.fitText()));
    device->setCurrentIndex(device->findData(QStringLiteral("cuda:each")));
    panel.findChild<QSpinBox*>(QStringLiteral("pp"))->setValue(1);
    RunConfig c = panel.config();
    QCOMPARE(c.gpus, (std::vector<int>{0, 1}));
    QVERIFY2(panel.fitText().contains(QStringLiteral("per rank")), qPrintable(panel.fitText()));
    QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
    panel.findChild<QSpinBox*>(QStringLiteral("pp"))->setValue(2);  // 4 ranks, 2 GPUs
    QVERIFY2(panel.problem().contains(QStringLiteral("needs 4 GPUs")), qPrintable(panel.problem()));

    DeviceProbe none;
    none.reason = "no CUDA driver or GPU: test";
    panel.setDevices(none);
    QCOMPARE(panel.config().device, std::string("cpu"));  // the GPU selection is gone with the GPUs
    QCOMPARE(device->count(), 2);
    QVERIFY(device->itemText(1).contains(QStringLiteral("no CUDA driver or GPU: test")));
    QVERIFY(!qobject_cast<QStandardItemModel*>(device->model())->item(1)->isEnabled());
  }
};

QTEST_MAIN(TestUi)
#include "test_ui.moc"
