// SPDX-License-Identifier: GPL-3.0-or-later
// NCCL across processes (parallel/nccl_communicator.h, app/cli_launch.cpp):
// shardscope-cli train --device cuda under `mpirun -np 4`, on the emulated
// CUDA and NCCL plugins (tests/engine/cuda_emulation: four pretend GPUs per
// process, NCCL's calls as MPI messages), gives the per-step losses of the
// 4-thread CPU run for DDP, ZeRO-2, ZeRO-3 and pp 2 x dp 2; each group's unique id
// travels from its first rank (a rank whose copy changed is refused, and every
// process names it); a killed or a hung rank stops the job, named, also one
// hung in NCCL init; a rank failing alone is named once; a missing
// GPU or NCCL plugin is named. Skipped, saying so, only where mpirun is missing.
#include <QElapsedTimer>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <csignal>

#include "cli/mpi_runner.h"

namespace {

// 8 steps of gpt-tiny: the emulated GPUs run every kernel on the CPU.
const QStringList kRun{"train", "--model", "gpt-tiny",    "--steps", "8",        "--batch", "8",
                       "--seq", "16",      "--log-every", "1",       "--device", "cuda"};
constexpr double kTolerance = 1e-3;  // as test_cuda_training_emulated's fp32 rows

// The emulated CUDA and NCCL plugins, four pretend GPUs per process.
QProcessEnvironment emulated_gpus() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("SHARDSCOPE_CUDA_PLUGIN", SHARDSCOPE_CUDA_EMULATED);
  env.insert("SHARDSCOPE_NCCL_PLUGIN", SHARDSCOPE_NCCL_EMULATED);
  env.insert("SHARDSCOPE_EMULATED_GPUS", "4");
  return env;
}

// The process is stopped (SIGSTOP): state T in /proc/<pid>/stat.
bool stopped(qint64 pid) {
  QFile stat(QString("/proc/%1/stat").arg(pid));
  if (pid <= 0 || !stat.open(QIODevice::ReadOnly)) return false;
  const QByteArray line = stat.readAll();
  const qsizetype close = line.lastIndexOf(')');
  return close >= 0 && close + 2 < line.size() && line[close + 2] == 'T';
}

}  // namespace

class TestMpiNccl : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    if (QStandardPaths::findExecutable("mpirun").isEmpty())
      QSKIP("skipped: mpirun not found (install Open MPI: scripts/install-deps.sh installs openmpi-bin)");
  }

  void losses_match_threads_data() {
    QTest::addColumn<QStringList>("layout");
    QTest::newRow("ddp") << QStringList{"--dp", "4"};
    QTest::newRow("zero2") << QStringList{"--dp", "4", "--zero", "2"};
    QTest::newRow("zero3") << QStringList{"--dp", "4", "--zero", "3"};
    QTest::newRow("pp2xdp2 1f1b") << QStringList{"--dp", "2",          "--pp", "2", "--micro-batches",
                                                 "2",    "--schedule", "1f1b"};
  }

  // One GPU per process, NCCL between them: the losses of the CPU threads.
  void losses_match_threads() {
    QFETCH(QStringList, layout);
    QTemporaryDir dir;
    const QString threads = dir.filePath("threads.jsonl"), gpus = dir.filePath("gpus.jsonl");
    QStringList cpu = kRun + layout + QStringList{"--metrics-out", threads};
    cpu.replace(cpu.indexOf("cuda"), "cpu");
    const CliResult t = run_cli(cpu);
    QVERIFY2(t.code == 0, qPrintable(t.err));
    const CliResult p = run_mpi(4, kRun + layout + QStringList{"--metrics-out", gpus}, 300000, emulated_gpus());
    QVERIFY2(p.code == 0, qPrintable(p.err.right(3000) + "\n--- stdout:\n" + p.out.right(1000)));
    QVERIFY2(p.out.contains("4 MPI processes, one rank each; NCCL between the processes' GPUs"), qPrintable(p.out));
    QVERIFY2(p.out.contains("one rank per GPU (NCCL)"), qPrintable(p.out));
    const double worst = worst_difference(losses(threads), losses(gpus), 8);
    qInfo("largest relative loss difference over 8 steps: %g", worst);
    QVERIFY2(worst <= kTolerance, qPrintable(QString::number(worst)));
  }

  // Rank 1's copy of the first group's id differs from rank 0's: the id's
  // maker refuses it, rank 1 fails naming it, and every process stops naming rank 1.
  void changed_unique_id_is_refused() {
    QProcessEnvironment env = emulated_gpus();
    env.insert("SHARDSCOPE_EMULATED_NCCL_WRONG_ID", "1");
    QElapsedTimer timer;
    timer.start();
    const CliResult r = run_mpi(4, kRun + QStringList{"--dp", "4"}, 120000, env);
    qInfo("stopped after %lld ms", static_cast<long long>(timer.elapsed()));
    QVERIFY2(r.code != 0, qPrintable(r.err));
    QVERIFY2(timer.elapsed() < 30000, qPrintable(QString::number(timer.elapsed())));
    QVERIFY2(r.err.contains("error: rank 1: NCCL communicator of ranks 0,1,2,3: NCCL init of rank 1 of 4 on GPU 1: "
                            "ncclCommInitRank: invalid usage"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("process 0 never made this unique id"), qPrintable(r.err));
    const QString unnamed = ranks_not_saying(r.err, {0, 1, 2, 3}, {"rank 1"});
    QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed));
  }

  // kill -9 of rank 2 mid-run: the others abort their NCCL communicators and exit within 10 s, naming it.
  void killed_rank_stops_every_process() {
    const SignalledJob job = signal_rank_mid_run(4, kRun + QStringList{"--dp", "4", "--steps", "100000"}, 2, SIGKILL,
                                                 10000, emulated_gpus());
    qInfo("stopped %lld ms after kill -9 of rank 2", static_cast<long long>(job.took_ms));
    const QString wrong = killed_rank_problem(job, 4, 2);  // each survivor names it (some on mpirun's SIGTERM)
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong));
  }

  // A rank that hangs (SIGSTOP): its peers' NCCL calls time out (--comm-timeout) and abort, naming it.
  void hung_rank_times_out() {
    const SignalledJob job = signal_rank_mid_run(
        4, kRun + QStringList{"--dp", "4", "--steps", "100000", "--comm-timeout", "3", "--heartbeat-timeout", "60"}, 2,
        SIGSTOP, 15000, emulated_gpus());
    QVERIFY(job.victim > 0);
    QVERIFY2(job.finished, "the job still ran 15 s after rank 2 hung");
    qInfo("stopped %lld ms after rank 2 hung", static_cast<long long>(job.took_ms));
    QVERIFY2(job.err.contains("of ranks 0,1,2,3 timed out after 3 s (--comm-timeout): its communicators are aborted"),
             qPrintable(job.err));
    QVERIFY2(job.err.contains("rank 2 does not answer (stopped or frozen)"), qPrintable(job.err));
  }

  // Rank 2 freezes (SIGSTOP, from the emulation's hook) as it starts to join the
  // first NCCL communicator: the others, blocked in ncclCommInitRank, time out
  // (--comm-timeout) and the job stops, every process naming rank 2 and NCCL init.
  void hung_rank_during_init_times_out() {
    QProcessEnvironment env = emulated_gpus();
    env.insert("SHARDSCOPE_EMULATED_NCCL_STOP_INIT", "2");
    QProcess job;
    job.setProcessEnvironment(env);
    job.start("mpirun",
              mpirun_prefix(4) + kRun + QStringList{"--dp", "4", "--comm-timeout", "3", "--heartbeat-timeout", "60"});
    QVERIFY(job.waitForStarted());
    qint64 victim = -1;
    for (int i = 0; i < 1200 && !stopped(victim); ++i) {  // its pid, once it has stopped itself
      QThread::msleep(50);
      victim = rank_pid(job.processId(), 2);
    }
    QVERIFY2(stopped(victim), "rank 2 never stopped in NCCL init");
    QElapsedTimer timer;
    timer.start();
    const bool finished = job.waitForFinished(15000);
    if (!finished) {  // mpirun passes SIGTERM on to its processes; SIGKILL would leave them running
      ::kill(static_cast<pid_t>(victim), SIGKILL);
      job.terminate();
      if (!job.waitForFinished(5000)) job.kill();
    }
    const QString err = QString::fromUtf8(job.readAllStandardError());
    QVERIFY2(finished, qPrintable("the job still ran 15 s after rank 2 stopped in NCCL init:\n" + err));
    qInfo("stopped %lld ms after rank 2 stopped in NCCL init (--comm-timeout 3)",
          static_cast<long long>(timer.elapsed()));
    QVERIFY(job.exitCode() != 0 || job.exitStatus() != QProcess::NormalExit);
    QVERIFY2(err.contains("NCCL init of ranks 0,1,2,3 timed out after 3 s (--comm-timeout)"), qPrintable(err));
    for (const int survivor : {0, 1, 3}) {
      bool named = false;
      for (const QString& line : err.split('\n'))
        named = named || (line.contains(QString("error: rank %1: ").arg(survivor)) && line.contains("NCCL init") &&
                          line.contains("rank 2 does not answer (stopped or frozen)"));
      QVERIFY2(named, qPrintable(QString("rank %1 did not name rank 2 and NCCL init:\n").arg(survivor) + err));
    }
  }

  // No CUDA plugin (no GPU), or no NCCL plugin: each process says which, and the job stops.
  void missing_gpu_or_nccl_is_named() {
    QProcessEnvironment env = emulated_gpus();
    env.insert("SHARDSCOPE_CUDA_PLUGIN", "/nonexistent/libshardscope_cuda.so");
    const CliResult no_gpu = run_mpi(4, kRun + QStringList{"--dp", "4"}, 120000, env);
    QVERIFY2(no_gpu.code != 0, qPrintable(no_gpu.err));
    // Each process finds it, but mpirun may end some before they print: one message is enough.
    QVERIFY2(no_gpu.err.contains(": --device cuda under mpirun: no CUDA plugin built: "
                                 "/nonexistent/libshardscope_cuda.so does not exist (SHARDSCOPE_CUDA_PLUGIN) "
                                 "(every process needs a GPU; train on the CPU with --device cpu)"),
             qPrintable(no_gpu.err));
    env = emulated_gpus();
    env.insert("SHARDSCOPE_NCCL_PLUGIN", "/nonexistent/libshardscope_nccl.so");
    const CliResult no_nccl = run_mpi(4, kRun + QStringList{"--dp", "4"}, 120000, env);
    QVERIFY2(no_nccl.code != 0, qPrintable(no_nccl.err));
    QVERIFY2(no_nccl.err.contains("--device cuda under mpirun: the processes talk through NCCL, which is unavailable"),
             qPrintable(no_nccl.err));
  }

  // Rank 2 alone has no CUDA plugin: its error names it once, and so does every other process's.
  void one_rank_without_gpu_is_named_once() {
    const QStringList run = kRun + QStringList{"--dp", "4"};
    const QStringList no_gpu =
        QStringList{"env", "SHARDSCOPE_CUDA_PLUGIN=/nonexistent/libshardscope_cuda.so", SHARDSCOPE_CLI} + run;
    const CliResult r = run_mpirun(mpirun_one_apart(4, 2, run, no_gpu), 120000, emulated_gpus());
    QVERIFY2(r.code != 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("error: rank 2: --device cuda under mpirun: no CUDA plugin built"), qPrintable(r.err));
    const QString unnamed = not_named_once(r, 4, "rank 2");
    QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed));
  }

  // launch starts the processes with the GPUs as mpirun does.
  void launch_runs_nccl_processes() {
    QTemporaryDir dir;
    const QString metrics = dir.filePath("m.jsonl");
    QProcess p;
    p.setProcessEnvironment(emulated_gpus());
    p.start(SHARDSCOPE_CLI, QStringList{"launch", "--nproc-per-node", "2", "--"} + kRun +
                                QStringList{"--dp", "2", "--steps", "2", "--metrics-out", metrics});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    QVERIFY2(p.readAllStandardOutput().contains("2 MPI processes, one rank each; NCCL"), "not the NCCL path");
    QCOMPARE(losses(metrics).size(), std::size_t{2});
  }
};

QTEST_GUILESS_MAIN(TestMpiNccl)
#include "test_mpi_nccl.moc"
