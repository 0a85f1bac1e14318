// SPDX-License-Identifier: GPL-3.0-or-later
// Ranks as processes in the window, offscreen (ui/process_job.h): with "Ranks
// run as: processes", Run starts shardscope-cli launch and the views fill from
// every rank's events, ending with the threaded run's losses exactly (its
// recording replays the same); File →
// Attach shows a job started from a shell; a rank killed mid-run ends the run
// with an error naming it, and Stop ends the job, neither hanging. Skipped
// where mpirun is missing.
#include <unistd.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <set>

#include "config/gpu_profiles.h"
#include "config_panel.h"
#include "main_window.h"
#include "recording_controller.h"
#include "run_controller.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/pipeline_timeline.h"
#include "views/qcustomplot_include.h"
#include "views/tensor_parallel_view.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

RunConfig smallPipeline(std::int64_t steps) {
  RunConfig c = ConfigPanel::defaultConfig();  // gpt-tiny, dp 2 x pp 2, 1F1B
  c.steps = steps;
  c.batch = 8;
  c.seq = 32;
  c.micro_batches = 4;
  return c;
}

std::vector<double> lossPoints(const MainWindow& window) {
  std::vector<double> out;
  const QCPGraph* train = window.lossPlot()->plot()->graph(0);
  for (auto it = train->data()->constBegin(); it != train->data()->constEnd(); ++it) out.push_back(it->value);
  return out;
}

// Every rank that emitted an event the views were handed.
struct RankSeen {
  std::set<int> ranks;
  void connectTo(RunController* controller, QObject* context) {
    QObject::connect(controller, &RunController::eventsDrained, context, [this](const std::vector<Event>& events) {
      for (const Event& e : events) ranks.insert(e.rank);
    });
  }
};

// The pid of global rank `rank` of the job this test process started (launch
// execs mpirun, whose children carry OMPI_COMM_WORLD_RANK).
qint64 rankPid(int rank) {
  QProcess pgrep;
  pgrep.start(QStringLiteral("pgrep"), {QStringLiteral("-P"), QString::number(getpid())});
  pgrep.waitForFinished();
  for (const QByteArray& launcher : pgrep.readAllStandardOutput().split('\n')) {
    if (launcher.trimmed().isEmpty()) continue;
    QProcess children;
    children.start(QStringLiteral("pgrep"), {QStringLiteral("-P"), QString::fromLatin1(launcher.trimmed())});
    children.waitForFinished();
    for (const QByteArray& pid : children.readAllStandardOutput().split('\n')) {
      QFile environ("/proc/" + QString::fromLatin1(pid.trimmed()) + "/environ");
      if (pid.trimmed().isEmpty() || !environ.open(QIODevice::ReadOnly)) continue;
      if (environ.readAll().split('\0').contains("OMPI_COMM_WORLD_RANK=" + QByteArray::number(rank)))
        return pid.trimmed().toLongLong();
    }
  }
  return -1;
}

void startAsProcesses(MainWindow& window, const RunConfig& config) {
  window.controller()->setCliPath(QStringLiteral(SHARDSCOPE_CLI));
  window.configPanel()->setConfig(config);
  window.configPanel()->setRanksAsProcesses(true);
  QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
  QTest::mouseClick(window.runButton(), Qt::LeftButton);
  QVERIFY(window.controller()->runsProcesses());
}

}  // namespace

class TestGuiProcesses : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    if (QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty())
      QSKIP("skipped: mpirun not found (install Open MPI: scripts/install-deps.sh installs openmpi-bin)");
  }

  void processesFillTheViewsAsThreads() {
    MainWindow threads;
    threads.configPanel()->setConfig(smallPipeline(10));
    QTest::mouseClick(threads.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!threads.controller()->busy(), 120000);
    const std::vector<double> expected = lossPoints(threads);
    QCOMPARE(expected.size(), std::size_t{10});

    MainWindow window;
    window.show();
    const QString recording = QDir(QCoreApplication::applicationDirPath()).filePath("test_gui_processes.ssrun");
    QFile::remove(recording);
    window.recorder()->setRecordPath(recording);
    RankSeen seen;
    seen.connectTo(window.controller(), this);
    QElapsedTimer timer;
    timer.start();
    startAsProcesses(window, smallPipeline(10));
    QVERIFY(!window.stepButton()->isEnabled());  // no single steps of processes
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    qInfo("10 steps as 4 processes in %lld ms", static_cast<long long>(timer.elapsed()));
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Finished")), qPrintable(window.statusText()));
    QCOMPARE(lossPoints(window), expected);  // bitwise: ring collectives over MPI sum as threads do
    QCOMPARE(seen.ranks, (std::set<int>{0, 1, 2, 3}));
    auto* timeline = window.findChild<PipelineTimelineView*>();
    QCOMPARE(timeline->lastCompletedStep(), std::int64_t{10});
    QCOMPARE(timeline->boxes(10).size(), std::size_t{16});  // 2 stages x 4 micro-batches x fwd/bwd
    for (int r = 0; r < 4; ++r) QVERIFY2(window.memoryBars()->bytes(r).total() > 0, qPrintable(QString::number(r)));
    // The multi-process recording replays as a threaded one does.
    MainWindow replay;
    QVERIFY(replay.openRecording(recording));
    QCOMPARE(lossPoints(replay), expected);
    QCOMPARE(replay.findChild<PipelineTimelineView*>()->boxes(10).size(), std::size_t{16});
  }

  // dp 2 × tp 2 from the panel as 4 processes: the threaded run's losses, and
  // the Tensor parallel view counts the same layer collectives as under threads.
  void tensorParallelProcessesEqualThreads() {
    RunConfig c = smallPipeline(4);
    c.layout[Axis::pp] = 1;
    c.layout[Axis::tp] = 2;
    c.micro_batches = 1;
    MainWindow threads;
    threads.configPanel()->setConfig(c);
    QCOMPARE(threads.configPanel()->config().layout.tp(), 2);
    QTest::mouseClick(threads.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!threads.controller()->busy(), 120000);
    const std::vector<double> expected = lossPoints(threads);
    QCOMPARE(expected.size(), std::size_t{4});
    const std::int64_t collectives = threads.findChild<TensorParallelView*>()->model().collectives(0);
    // 4 steps x 2 tp ranks x 4 all-reduces (6 when the recompute repeats the forward's 2).
    QCOMPARE(collectives, std::int64_t{4} * 2 * (c.checkpoint ? 6 : 4));
    MainWindow window;
    startAsProcesses(window, c);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Finished")), qPrintable(window.statusText()));
    QCOMPARE(lossPoints(window), expected);
    QCOMPARE(window.findChild<TensorParallelView*>()->model().collectives(0), collectives);
  }

  // A job started from a shell, streaming to the window's port.
  void attachShowsAShellJob() {
    MainWindow window;
    window.show();
    RankSeen seen;
    seen.connectTo(window.controller(), this);
    QVERIFY(window.attachToJob(0));  // 0: any free port (the menu asks for one)
    const int port = window.controller()->jobPort();
    QVERIFY(port > 0);
    QVERIFY(window.statusText().contains(QString::number(port)));
    QProcess job;
    job.start(QStringLiteral(SHARDSCOPE_CLI), {"launch",
                                               "--nproc-per-node",
                                               "4",
                                               "--",
                                               "train",
                                               "--model",
                                               "gpt-tiny",
                                               "--dp",
                                               "2",
                                               "--pp",
                                               "2",
                                               "--micro-batches",
                                               "4",
                                               "--batch",
                                               "8",
                                               "--seq",
                                               "32",
                                               "--steps",
                                               "6",
                                               "--events-to",
                                               QStringLiteral("127.0.0.1:%1").arg(port)});
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY(job.waitForFinished(10000));
    QCOMPARE(job.exitCode(), 0);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Finished")), qPrintable(window.statusText()));
    QCOMPARE(lossPoints(window).size(), std::size_t{6});
    QCOMPARE(seen.ranks, (std::set<int>{0, 1, 2, 3}));
    QCOMPARE(window.findChild<PipelineTimelineView*>()->boxes(6).size(), std::size_t{16});
  }

  // A job whose --schedule-file is relative to its own working directory, which the window does not share:
  // the window draws the schedule the job read, from the rows its stream sends, not from a file of its own.
  void attachDrawsTheJobsScheduleFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QFile::copy(QStringLiteral(SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/1f1b_pp4_m8.csv"),
                        dir.filePath(QStringLiteral("job_schedule.csv"))));
    QVERIFY(!QFile::exists(QStringLiteral("job_schedule.csv")));  // not in the window's working directory
    MainWindow window;
    window.show();
    QVERIFY(window.attachToJob(0));
    const int port = window.controller()->jobPort();
    QProcess job;
    job.setWorkingDirectory(dir.path());
    job.start(QStringLiteral(SHARDSCOPE_CLI),
              {"launch", "--nproc-per-node", "4", "--", "train", "--model", "gpt-tiny", "--pp", "4", "--batch", "8",
               "--seq", "32", "--steps", "3", "--schedule-file", "job_schedule.csv", "--events-to",
               QStringLiteral("127.0.0.1:%1").arg(port)});
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY(job.waitForFinished(10000));
    QCOMPARE(job.exitCode(), 0);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Finished")), qPrintable(window.statusText()));
    QCOMPARE(lossPoints(window).size(), std::size_t{3});
    QVERIFY(window.controller()->jobPlan()->schedule_file().has_value());
  }

  void killedRankEndsTheRunNamingIt() {
    MainWindow window;
    startAsProcesses(window, smallPipeline(100000));
    QTRY_VERIFY_WITH_TIMEOUT(!lossPoints(window).empty(), 60000);
    const qint64 victim = rankPid(2);
    QVERIFY(victim > 0);
    ::kill(static_cast<pid_t>(victim), SIGKILL);
    QElapsedTimer timer;
    timer.start();
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 15000);
    qInfo("the run ended %lld ms after kill -9 of rank 2: %s", static_cast<long long>(timer.elapsed()),
          qPrintable(window.statusText()));
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    QVERIFY2(window.statusText().contains(QStringLiteral("rank 2")), qPrintable(window.statusText()));
  }

  // Also with a GPU profile chosen: it times the virtual clock, so the processes go without it.
  void stopEndsTheJob() {
    MainWindow window;
    RunConfig config = smallPipeline(100000);
    config.gpu_profile = gpu_profiles().front().name;
    startAsProcesses(window, config);
    QTRY_VERIFY_WITH_TIMEOUT(lossPoints(window).size() >= 2, 60000);
    QTest::mouseClick(window.stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 15000);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Stopped")), qPrintable(window.statusText()));
    QTRY_COMPARE_WITH_TIMEOUT(rankPid(0), qint64{-1}, 5000);  // no rank left behind
  }
};

QTEST_MAIN(TestGuiProcesses)
#include "test_gui_processes.moc"
