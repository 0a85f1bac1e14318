// SPDX-License-Identifier: GPL-3.0-or-later
// The desktop app, offscreen: the config panel builds the CLI's run config,
// invalid settings disable Run with the reason, a short run from the window
// fills the loss plot and the memory bars from engine events, Stop is prompt,
// errors are shown.
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QDoubleSpinBox>
#include <QCheckBox>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "config_panel.h"
#include "events/recording.h"
#include "main_window.h"
#include "train/metrics_json.h"
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
    return c;
  }
  static QString tempPath(const QString& name) { return QDir(QCoreApplication::applicationDirPath()).filePath(name); }

 private Q_SLOTS:
  void defaultPresetIsReady() {
    MainWindow window;
    const RunConfig c = window.configPanel()->config();
    QCOMPARE(c.model, std::string("gpt-tiny"));
    QCOMPARE(c.dp, 2);
    QCOMPARE(c.pp, 2);
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
    QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));

    // The CLI with the same choices records its run config in the recording's header.
    const QString record = tempPath(QStringLiteral("test_ui_cli.ssrun"));
    QFile::remove(record);
    QProcess cli;
    cli.start(QStringLiteral(SHARDSCOPE_CLI),
              {"train", "--model", "gpt-tiny", "--steps", "1", "--batch", "8", "--seq", "32", "--lr", "0.002", "--dp",
               "2", "--pp", "2", "--dp-mode", "ddp", "--zero", "1", "--schedule", "gpipe", "--micro-batches", "2",
               "--accum", "2", "--checkpoint", "full", "--record", record});
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
  }

  void invalidCombinationDisablesRun() {
    MainWindow window;
    QVERIFY(window.runButton()->isEnabled());
    // 15 sequences cannot be split over 2 data-parallel ranks x 4 micro-batches.
    window.configPanel()->findChild<QSpinBox*>(QStringLiteral("batch"))->setValue(15);
    const QString problem = window.configPanel()->problem();
    QVERIFY(!problem.isEmpty());
    QVERIFY2(problem.contains(QStringLiteral("--batch")), qPrintable(problem));
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
    QCOMPARE(window.lossPlot()->evalPointCount(), 0);

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
    window.controller()->start(c);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 60000);
    QVERIFY2(window.logText().contains(QStringLiteral("injected failure")), qPrintable(window.logText()));
    QVERIFY2(window.statusText().contains(QStringLiteral("injected failure")), qPrintable(window.statusText()));
    QCOMPARE(window.lossPlot()->trainPointCount(), 1);
  }
};

QTEST_MAIN(TestUi)
#include "test_ui.moc"
