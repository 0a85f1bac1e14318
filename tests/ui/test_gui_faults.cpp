// SPDX-License-Identifier: GPL-3.0-or-later
// Stragglers and failures in the window, offscreen: a run with rank 3
// computing 3x as long shows, in the Waits tab, every other rank waiting for
// rank 3; a rank that fails is marked there with how fast every rank stopped,
// the log says what work the failure lost; with "Restarts after a failure"
// and checkpoints every 2 steps the run starts again from the latest one and
// ends with the loss of a run that never failed, and with the pipeline
// schedule it planned (its --schedule-file is not read again).
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "config_panel.h"
#include "main_window.h"
#include "train/trainer.h"
#include "views/loss_plot.h"
#include "views/qcustomplot_include.h"
#include "views/rank_waits_view.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

RunConfig small_run(int dp, int steps) {
  RunConfig c = ConfigPanel::defaultConfig();
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = 1;
  c.micro_batches = 1;
  c.steps = steps;
  c.batch = 8;
  c.seq = 32;
  c.eval_every = 0;
  return c;
}

bool runToEnd(MainWindow& window, const RunConfig& config) {
  window.configPanel()->setConfig(config);
  if (!window.configPanel()->problem().isEmpty()) {
    qWarning("%s", qPrintable(window.configPanel()->problem()));
    return false;
  }
  QTest::mouseClick(window.runButton(), Qt::LeftButton);
  return QTest::qWaitFor([&] { return !window.controller()->busy(); }, 60000);
}

}  // namespace

class TestGuiFaults : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void aStragglerIsNamedInTheWaitsTab() {
    MainWindow window;
    window.show();
    RunConfig c = small_run(4, 3);
    c.slow_rank = 3;
    c.slow_factor = 3.0;
    QVERIFY(runToEnd(window, c));
    auto* waits = window.findChild<WaitsView*>();
    QVERIFY(waits != nullptr);
    const std::int64_t step = waits->shownStep();
    QCOMPARE(step, std::int64_t{3});
    const RankWaits w = waits->model().waits(step);
    QCOMPARE(w.most_waited_for(), 3);
    for (int r = 0; r < 3; ++r) QVERIFY2(w.ns.contains({r, 3}), qPrintable(QString("rank %1").arg(r)));
    int labelled = 0;
    for (const WaitsBox& b : waits->model().boxes(step)) labelled += b.wait && b.culprit == 3 ? 1 : 0;
    QVERIFY(labelled >= 3);
    const QString header = waits->headerText();
    QVERIFY2(header.contains(QStringLiteral("for rank 3")) && header.contains(QStringLiteral("3× as long")),
             qPrintable(header));
  }

  void aFailedRankIsMarkedAndItsLostWorkSaid() {
    MainWindow window;
    window.show();
    RunConfig c = small_run(2, 5);
    c.fail_rank = 1;
    c.fail_step = 4;
    QVERIFY(runToEnd(window, c));
    QVERIFY2(window.statusText().contains(QStringLiteral("failed")), qPrintable(window.statusText()));
    auto* waits = window.findChild<WaitsView*>();
    const auto& failure = waits->model().failure();
    QVERIFY(failure.has_value());
    QCOMPARE(failure->rank, 1);
    QCOMPARE(waits->shownStep(), std::int64_t{4});
    QVERIFY2(waits->headerText().contains(QStringLiteral("Rank 1 failed at step 4")), qPrintable(waits->headerText()));
    QVERIFY2(waits->headerText().contains(QStringLiteral("all 2 ranks stopped within")),
             qPrintable(waits->headerText()));
    QTRY_VERIFY2(window.logText().contains(QStringLiteral("lost work: the run stopped in step 4; without --save-dir "
                                                          "its 3 finished steps are lost")),
                 qPrintable(window.logText()));
  }

  void aRestartResumesFromTheLatestCheckpoint() {
    RunConfig c = small_run(2, 6);
    std::vector<float> reference;  // the run that never fails
    {
      Trainer trainer(c, nullptr);
      trainer.run([&](const StepMetrics& m) { reference.push_back(m.loss); });
    }
    QTemporaryDir dir;
    MainWindow window;
    window.show();
    window.setCheckpointDir(dir.path(), 2);
    window.configPanel()->setMaxRestarts(1);
    c.fail_rank = 1;
    c.fail_step = 4;
    QVERIFY(runToEnd(window, c));
    QVERIFY2(!window.statusText().contains(QStringLiteral("failed")), qPrintable(window.statusText()));
    const QString log = window.logText();
    QVERIFY2(log.contains(QStringLiteral("lost work: the run stopped in step 4; the last checkpoint is step 2 "
                                         "(--save-every 2), so a restart from")) &&
                 log.contains(QStringLiteral("runs 1 finished step again")),
             qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("restart 1 of 1 after the run failed")) &&
                 log.contains(QStringLiteral("resuming from ")),
             qPrintable(log));
    // The loss plot's last point is step 6, with the loss of the run that never failed, bit for bit.
    const QCPGraph* train = window.lossPlot()->plot()->graph(0);
    QVERIFY(!train->data()->isEmpty());
    const auto last = train->data()->constEnd() - 1;
    QCOMPARE(last->key, 6.0);
    QCOMPARE(static_cast<float>(last->value), reference.back());
    QVERIFY(QDir(dir.path()).exists(QStringLiteral("step-000006")));
  }

  // A restart runs the schedule the run planned: the --schedule-file is gone
  // from the disk once the run has started, and the restart (from the start:
  // no checkpoints) still runs, from the plan's copy, to the last step.
  void aRestartKeepsThePlannedScheduleFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("1f1b.csv"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n");  // 1F1B, p 2, m 4
    }
    MainWindow window;
    window.show();
    window.configPanel()->setMaxRestarts(1);
    RunConfig c = small_run(1, 4);
    c.layout[Axis::pp] = 2;
    c.micro_batches = 4;
    c.schedule_file = path.toStdString();
    c.fail_rank = 1;
    c.fail_step = 3;
    window.configPanel()->setConfig(c);
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QVERIFY(window.controller()->busy());
    QVERIFY(QFile::remove(path));  // the run is planned: nothing reads the file again
    QVERIFY(QTest::qWaitFor([&] { return !window.controller()->busy(); }, 60000));
    const QString log = window.logText();
    QVERIFY2(log.contains(QStringLiteral("restart 1 of 1 after the run failed")) &&
                 !log.contains(QStringLiteral("cannot be read")),
             qPrintable(log));
    QVERIFY2(!window.statusText().contains(QStringLiteral("failed")), qPrintable(window.statusText()));
    const QCPGraph* train = window.lossPlot()->plot()->graph(0);
    QVERIFY(!train->data()->isEmpty());
    QCOMPARE((train->data()->constEnd() - 1)->key, 4.0);
  }
};

QTEST_MAIN(TestGuiFaults)
#include "test_gui_faults.moc"
