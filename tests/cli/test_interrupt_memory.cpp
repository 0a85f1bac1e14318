// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli under Ctrl-C: it stops a long step within a bounded time and
// keeps the finished steps' metrics, and a second Ctrl-C exits at once.
#include <signal.h>
#include <unistd.h>

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "cli/cli_runner.h"

namespace {

// Reads `p`'s merged output into `out` until it holds `text`; false on timeout or exit.
bool wait_for_output(QProcess& p, QByteArray& out, const QByteArray& text, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (!out.contains(text)) {
    if (timer.elapsed() > timeout_ms || p.state() == QProcess::NotRunning) return false;
    p.waitForReadyRead(50);
    out += p.readAll();
  }
  return true;
}

// The first line of a metrics file, as JSON.
QJsonObject first_metrics(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readLine()).object();
}

}  // namespace

class TestInterruptMemory : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ctrl_c_mid_step_keeps_the_finished_steps();
  void second_ctrl_c_exits_at_once();

 private:
  QTemporaryDir dir_;
};

// Steps of 8 accumulation micro-steps (seconds on 2 cores): Ctrl-C a quarter
// into step 2 stops it at a layer boundary, and it is discarded; step 1's
// metrics stay complete.
void TestInterruptMemory::ctrl_c_mid_step_keeps_the_finished_steps() {
  const QString metrics = dir_.path() + "/interrupted.jsonl";
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(SHARDSCOPE_CLI, {"train", "--model", "gpt-tiny", "--steps", "4", "--batch", "32", "--seq", "256", "--accum",
                           "8", "--eval-every", "0", "--log-every", "1", "--metrics-out", metrics});
  QByteArray out;
  QVERIFY2(wait_for_output(p, out, "step      1/4", 300000), out.constData());
  const qint64 step_ms = static_cast<qint64>(first_metrics(metrics)["step_time_s"].toDouble() * 1000);
  QVERIFY(step_ms > 0);
  QTest::qWait(static_cast<int>(step_ms / 4));  // well inside step 2
  QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
  QElapsedTimer stopping;
  stopping.start();
  QVERIFY(p.waitForFinished(120000));
  const qint64 stop_ms = stopping.elapsed();
  out += p.readAll();
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 130);
  QVERIFY2(out.contains("done: 1 steps"), out.constData());

  QFile f(metrics);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 1);  // step 1 only: step 2 was cut short and discarded
  const QJsonObject step1 = QJsonDocument::fromJson(lines[0]).object();
  QCOMPARE(step1["step"].toInt(), 1);
  QVERIFY(step1["loss"].isDouble() && step1["memory"].isObject());
  qInfo("Ctrl-C honoured %lld ms after the signal; a step takes %lld ms", static_cast<long long>(stop_ms),
        static_cast<long long>(step_ms));
  // Stopped at a layer boundary, not at the end of the step (before: the rest of step 2).
  QVERIFY2(stop_ms < step_ms / 2 && stop_ms < 2000,
           qPrintable(QString("stopped %1 ms after Ctrl-C; a step takes %2 ms").arg(stop_ms).arg(step_ms)));
}

// gpt-mini with 16 x 512-token sequences: one layer takes long enough that the
// second Ctrl-C arrives while the first is still waiting for a layer boundary.
// The second exits from the signal handler, so the closing "done:" line never
// comes. Should the first win the race (a very fast machine), try again.
void TestInterruptMemory::second_ctrl_c_exits_at_once() {
  for (int attempt = 0; attempt < 3; ++attempt) {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(SHARDSCOPE_CLI, {"train", "--model", "gpt-mini", "--steps", "3", "--batch", "16", "--seq", "512",
                             "--checkpoint", "full", "--eval-every", "0"});
    QByteArray out;
    QVERIFY2(wait_for_output(p, out, "global batch", 120000), out.constData());  // the handler is installed
    QTest::qWait(300);                                                           // inside step 1
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    QVERIFY2(wait_for_output(p, out, "interrupted:", 10000), out.constData());  // the first was delivered
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    QElapsedTimer exiting;
    exiting.start();
    QVERIFY(p.waitForFinished(60000));
    const qint64 exit_ms = exiting.elapsed();
    out += p.readAll();
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 130);
    QVERIFY2(exit_ms < 1000, qPrintable(QString("exited %1 ms after the second Ctrl-C").arg(exit_ms)));
    if (!out.contains("done:")) {
      qInfo("exited %lld ms after the second Ctrl-C (attempt %d)", static_cast<long long>(exit_ms), attempt + 1);
      return;
    }
  }
  QFAIL("the first Ctrl-C always finished before the second arrived: the handler's exit was never seen");
}

QTEST_GUILESS_MAIN(TestInterruptMemory)
#include "test_interrupt_memory.moc"
