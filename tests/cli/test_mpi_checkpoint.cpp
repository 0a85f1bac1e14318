// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints with the ranks as processes (engine/train/checkpoint_save.cpp,
// MpiWorld::gather_to_rank0): under `mpirun -np 4` every process writes its
// own rank file and rank 0 commits; a run resumed under mpirun or launch prints the
// uninterrupted run's losses bit for bit; the rank files are the threaded
// run's, byte for byte, so a checkpoint moves between threads and processes
// both ways; a save killed mid-commit is never resumed from; a rank that
// fails while a save is in flight lets it commit, or abandons it after a
// bounded wait and keeps the last one. Skipped, saying so, only where mpirun
// is missing.
#include <QElapsedTimer>
#include <QFile>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <filesystem>

#include "cli/mpi_runner.h"

namespace fs = std::filesystem;

namespace {

// 4 steps of gpt-tiny on dp 2 x pp 2, one CPU thread per rank in both forms:
// the threaded and the process run then compute the same bits.
const QStringList kRun{"train", "--model", "gpt-tiny", "--steps",   "4",    "--batch",  "8",
                       "--seq", "16",      "--dp",     "2",         "--pp", "2",        "--micro-batches",
                       "2",     "--zero",  "1",        "--threads", "4",    "--warmup", "1"};

QByteArray file_bytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString failure(const CliResult& r) {  // stderr first (the failing rank says why), then stdout's end
  return r.err.right(3000) + "\n--- stdout:\n" + r.out.right(1500);
}

// The last two of a 4-step run's losses.
std::vector<double> last_two(const std::vector<double>& all) {
  return all.size() == 4 ? std::vector<double>{all[2], all[3]} : std::vector<double>{};
}

}  // namespace

class TestMpiCheckpoint : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    if (QStandardPaths::findExecutable("mpirun").isEmpty())
      QSKIP("skipped: mpirun not found (install Open MPI: scripts/install-deps.sh installs openmpi-bin)");
  }

  // Saved by threads and by processes at step 2 of 4, then each resumed both ways.
  void resume_across_threads_and_processes() {
    QTemporaryDir dir;
    const QString processes = dir.filePath("processes"), threads = dir.filePath("threads");
    const QString p_full = dir.filePath("p.jsonl"), t_full = dir.filePath("t.jsonl");
    const CliResult p =
        run_mpi(4, kRun + QStringList{"--save-dir", processes, "--save-every", "2", "--metrics-out", p_full});
    QVERIFY2(p.code == 0, qPrintable(failure(p)));
    QVERIFY2(p.out.contains("checkpoint: step 2 saved to " + processes + "/step-000002"), qPrintable(p.out));
    QCOMPARE(p.out.count("checkpoint: step 4 saved"), 1);  // rank 0 alone prints
    const CliResult t =
        run_cli(kRun + QStringList{"--save-dir", threads, "--save-every", "2", "--metrics-out", t_full});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    QCOMPARE(losses(p_full), losses(t_full));  // bit for bit (the JSON holds the float exactly)
    QCOMPARE(losses(p_full).size(), std::size_t{4});
    // One format: every rank file (and the whole model's weights) is the same bytes whoever wrote it.
    for (const QString name : {"rank-0.safetensors", "rank-1.safetensors", "rank-2.safetensors", "rank-3.safetensors",
                               "model.safetensors", "manifest.json"}) {
      const QByteArray a = file_bytes(processes + "/step-000002/" + name),
                       b = file_bytes(threads + "/step-000002/" + name);
      QVERIFY2(!a.isEmpty() && a == b, qPrintable(name));
    }
    struct Resume {
      QString how;  // "mpirun", "launch" or "threads"
      QString from;
    };
    for (const Resume& r : {Resume{"mpirun", processes}, Resume{"mpirun", threads}, Resume{"launch", threads},
                            Resume{"threads", processes}}) {
      const QString out = dir.filePath("resumed-" + r.how + ".jsonl");
      QFile::remove(out);
      const QStringList args = kRun + QStringList{"--resume", r.from + "/step-000002", "--metrics-out", out};
      const CliResult c = r.how == "mpirun"   ? run_mpi(4, args)
                          : r.how == "launch" ? run_cli(QStringList{"launch", "--nproc-per-node", "4", "--"} + args)
                                              : run_cli(args);
      QVERIFY2(c.code == 0, qPrintable(failure(c)));
      QVERIFY2(c.out.contains("resumed from " + r.from + "/step-000002 at step 2"), qPrintable(c.out));
      QVERIFY2(losses(out) == last_two(losses(p_full)), qPrintable(r.how + " from " + r.from));
    }
  }

  // dp 2 x tp 2 under mpirun: every process writes its tp slices, the files are
  // the threaded run's byte for byte, and the save resumes as threads at tp 4
  // (each rank re-slices the reassembled tensors) within 2e-5 of the uninterrupted losses.
  void tensor_parallel_checkpoints_move_between_processes_and_tp() {
    QTemporaryDir dir;
    const QStringList run{"train", "--model", "gpt-tiny", "--steps", "4",         "--batch", "8",        "--seq", "16",
                          "--dp",  "2",       "--tp",     "2",       "--threads", "4",       "--warmup", "1"};
    const QString processes = dir.filePath("processes"), threads = dir.filePath("threads");
    const QString p_full = dir.filePath("p.jsonl"), resumed = dir.filePath("tp4.jsonl");
    const CliResult p =
        run_mpi(4, run + QStringList{"--save-dir", processes, "--save-every", "2", "--metrics-out", p_full});
    QVERIFY2(p.code == 0, qPrintable(failure(p)));
    const CliResult t = run_cli(run + QStringList{"--save-dir", threads, "--save-every", "2"});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    for (const QString name : {"rank-0.safetensors", "rank-3.safetensors", "model.safetensors", "manifest.json"}) {
      const QByteArray a = file_bytes(processes + "/step-000002/" + name),
                       b = file_bytes(threads + "/step-000002/" + name);
      QVERIFY2(!a.isEmpty() && a == b, qPrintable(name));
    }
    QStringList tp4 = run;
    tp4[tp4.indexOf("--dp") + 1] = "1";
    tp4[tp4.indexOf("--tp") + 1] = "4";
    const CliResult c = run_cli(tp4 + QStringList{"--resume", processes + "/step-000002", "--metrics-out", resumed});
    QVERIFY2(c.code == 0, qPrintable(failure(c)));
    const std::vector<double> want = last_two(losses(p_full)), got = losses(resumed);
    QCOMPARE(got.size(), std::size_t{2});
    QCOMPARE(want.size(), std::size_t{2});
    for (std::size_t i = 0; i < 2; ++i)
      QVERIFY2(std::fabs(got[i] - want[i]) <= 2e-5 * std::fabs(want[i]),
               qPrintable(QString("%1 vs %2").arg(got[i], 0, 'g', 9).arg(want[i], 0, 'g', 9)));
  }

  // gpt-tiny-moe at dp 2 x ep 2 under mpirun: each process writes its block of
  // experts, the files are the threaded run's byte for byte (no Hugging Face
  // weights: a mixture of experts has none), the save resumes under mpirun bit
  // for bit and as threads at ep 1 within 2e-5 of the uninterrupted losses.
  void expert_parallel_checkpoints_move_between_processes_and_ep() {
    QTemporaryDir dir;
    const QStringList run{
        "train", "--model", "gpt-tiny-moe", "--steps", "4",         "--batch", "8",        "--seq", "16",
        "--dp",  "2",       "--ep",         "2",       "--threads", "2",       "--warmup", "1"};
    const QString processes = dir.filePath("processes"), threads = dir.filePath("threads");
    const QString p_full = dir.filePath("p.jsonl"), again = dir.filePath("again.jsonl"),
                  ep1 = dir.filePath("ep1.jsonl");
    const CliResult p =
        run_mpi(2, run + QStringList{"--save-dir", processes, "--save-every", "2", "--metrics-out", p_full});
    QVERIFY2(p.code == 0, qPrintable(failure(p)));
    const CliResult t = run_cli(run + QStringList{"--save-dir", threads, "--save-every", "2"});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    for (const QString name : {"rank-0.safetensors", "rank-1.safetensors", "manifest.json"}) {
      const QByteArray a = file_bytes(processes + "/step-000002/" + name),
                       b = file_bytes(threads + "/step-000002/" + name);
      QVERIFY2(!a.isEmpty() && a == b, qPrintable(name));
    }
    QVERIFY(!QFile::exists(processes + "/step-000002/model.safetensors"));
    const CliResult c = run_mpi(2, run + QStringList{"--resume", processes + "/step-000002", "--metrics-out", again});
    QVERIFY2(c.code == 0, qPrintable(failure(c)));
    QVERIFY2(losses(again) == last_two(losses(p_full)), qPrintable(c.out));
    QStringList one = run;
    one[one.indexOf("--ep") + 1] = "1";
    const CliResult d = run_cli(one + QStringList{"--resume", processes + "/step-000002", "--metrics-out", ep1});
    QVERIFY2(d.code == 0, qPrintable(failure(d)));
    const std::vector<double> want = last_two(losses(p_full)), got = losses(ep1);
    QCOMPARE(got.size(), std::size_t{2});
    QCOMPARE(want.size(), std::size_t{2});
    for (std::size_t i = 0; i < 2; ++i)
      QVERIFY2(std::fabs(got[i] - want[i]) <= 2e-5 * std::fabs(want[i]),
               qPrintable(QString("%1 vs %2").arg(got[i], 0, 'g', 9).arg(want[i], 0, 'g', 9)));
  }

  // Rank 0 killed after every rank file is written, before the manifest and
  // the rename: the torn save stays a hidden temporary, the resume takes step
  // 2 and names it, and the next save removes it.
  void a_save_killed_mid_commit_is_never_resumed() {
    QTemporaryDir dir;
    const QString root = dir.filePath("ckpt");
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_KILL_BEFORE_COMMIT", "4");
    const CliResult killed = run_mpi(4, kRun + QStringList{"--save-dir", root, "--save-every", "2"}, 120000, env);
    QVERIFY2(killed.code != 0, qPrintable(failure(killed)));
    QStringList torn;
    for (const auto& entry : fs::directory_iterator(root.toStdString())) {
      const QString name = QString::fromStdString(entry.path().filename().string());
      if (name.startsWith(".step-000004.tmp-")) torn << name;
      QVERIFY2(name != "step-000004", "a killed commit left a step directory");
    }
    QCOMPARE(torn.size(), 1);
    const QString temp = root + "/" + torn.front();
    QVERIFY(QFile::exists(temp + "/rank-3.safetensors"));  // every rank had written its file
    QVERIFY(!QFile::exists(temp + "/manifest.json"));
    const CliResult resumed = run_mpi(4, kRun + QStringList{"--resume", root, "--save-dir", root});
    QVERIFY2(resumed.code == 0, qPrintable(failure(resumed)));
    QVERIFY2(resumed.out.contains("resumed from " + root + "/step-000002 at step 2"), qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains("checkpoint: ignored " + temp + ": a save that never committed"),
             qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains("checkpoint: step 4 saved to " + root + "/step-000004"), qPrintable(resumed.out));
    QVERIFY2(!QFile::exists(temp), "the next save removes a dead save's temporary");
  }

  // Issue 32: launch --max-restarts 1, and rank 2's process killed (SIGKILL,
  // SHARDSCOPE_KILL_AT_STEP: in the first run only) at step 7 of 8 with
  // --save-every 5: the job restarts from step 5, saying why, and its losses
  // are the uninterrupted run's bit for bit.
  void a_killed_job_restarts_from_its_last_checkpoint() {
    QTemporaryDir dir;
    const QString root = dir.filePath("ckpt"), whole = dir.filePath("whole.jsonl"),
                  restarted = dir.filePath("restarted.jsonl");
    QStringList run = kRun;
    run[run.indexOf("--steps") + 1] = "8";
    const CliResult t = run_cli(run + QStringList{"--metrics-out", whole});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_KILL_AT_STEP", "2:7");
    const CliResult r = run_cli(QStringList{"launch", "--nproc-per-node", "4", "--max-restarts", "1", "--"} + run +
                                    QStringList{"--save-dir", root, "--save-every", "5", "--metrics-out", restarted},
                                env);
    QVERIFY2(r.code == 0, qPrintable(failure(r)));
    QVERIFY2(r.err.contains("launch: restart 1 of 1 after the job failed (exit code "), qPrintable(failure(r)));
    QVERIFY2(r.err.contains(QRegularExpression("rank 2 \\(pid [0-9]+\\) died")), qPrintable(failure(r)));
    QVERIFY2(r.err.contains("; resuming from " + root + "/step-000005"), qPrintable(failure(r)));
    QVERIFY2(r.out.contains("resumed from " + root + "/step-000005 at step 5"), qPrintable(failure(r)));
    const std::vector<double> all = losses(whole), after = losses(restarted);
    QCOMPARE(all.size(), std::size_t{8});
    QCOMPARE(after, std::vector<double>(all.begin() + 5, all.end()));  // steps 6-8, bit for bit
  }

  // --inject-failure throws in the first run only: the restarted job runs on. Rank 0 says what the failure lost.
  void an_injected_failure_restarts_once_and_says_what_it_lost() {
    QTemporaryDir dir;
    const QString root = dir.filePath("ckpt"), whole = dir.filePath("whole.jsonl"),
                  restarted = dir.filePath("restarted.jsonl");
    QStringList run = kRun;
    run[run.indexOf("--steps") + 1] = "8";
    const CliResult t = run_cli(run + QStringList{"--metrics-out", whole});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    const CliResult r = run_cli(
        QStringList{"launch", "--nproc-per-node", "4", "--max-restarts", "1", "--"} + run +
        QStringList{"--save-dir", root, "--save-every", "5", "--inject-failure", "2:7", "--metrics-out", restarted});
    QVERIFY2(r.code == 0, qPrintable(failure(r)));
    QVERIFY2(r.err.contains("lost work: the run stopped in step 7; the last checkpoint is step 5 (--save-every 5), "
                            "so a restart from " +
                            root + "/step-000005 runs 1 finished step again"),
             qPrintable(failure(r)));
    QVERIFY2(r.err.contains("launch: restart 1 of 1 after the job failed") &&
                 r.err.contains("injected failure (--inject-failure) before backward of step 7"),
             qPrintable(failure(r)));
    QVERIFY2(!r.err.contains("launch: restart 2"), qPrintable(failure(r)));
    const std::vector<double> all = losses(whole), after = losses(restarted);
    QCOMPARE(after, std::vector<double>(all.begin() + 5, all.end()));
  }

  // Rank 2 fails at step 7 while its part of step 5's save is still being
  // written (SHARDSCOPE_SLOW_SAVE holds it 4 s): it tells the others only once
  // that save has ended, so the save every process had begun commits, rank 0
  // reports it, the lost-work text counts it, and a resume takes it.
  void a_save_in_flight_when_a_rank_fails_is_committed() {
    QTemporaryDir dir;
    const QString root = dir.filePath("ckpt");
    QStringList run = kRun;
    run[run.indexOf("--steps") + 1] = "8";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_SLOW_SAVE", "2:5:4000");
    const CliResult r =
        run_mpi(4, run + QStringList{"--save-dir", root, "--save-every", "5", "--inject-failure", "2:7"}, 60000, env);
    QVERIFY2(r.code != 0, qPrintable(failure(r)));
    QVERIFY2(r.err.contains("injected failure (--inject-failure) before backward of step 7"), qPrintable(failure(r)));
    // The failure came while the save was in flight (else this test proves nothing), and the stop waited for it.
    QVERIFY2(r.err.contains(QRegularExpression("the stop waited [0-9.]+ s for the checkpoint of step 5 in flight, "
                                               "which committed")),
             qPrintable(failure(r)));
    QVERIFY2(r.out.contains("checkpoint: step 5 saved to " + root + "/step-000005"), qPrintable(failure(r)));
    QVERIFY2(r.err.contains("lost work: the run stopped in step 7; the last checkpoint is step 5 (--save-every 5), "
                            "so a restart from " +
                            root + "/step-000005 runs 1 finished step again"),
             qPrintable(failure(r)));
    QVERIFY(QFile::exists(root + "/step-000005/manifest.json"));
    QVERIFY(QFile::exists(root + "/step-000005/rank-2.safetensors"));
    const CliResult resumed = run_mpi(4, run + QStringList{"--resume", root}, 60000);
    QVERIFY2(resumed.code == 0, qPrintable(failure(resumed)));
    QVERIFY2(resumed.out.contains("resumed from " + root + "/step-000005 at step 5"), qPrintable(failure(resumed)));
  }

  // Rank 2 fails at step 7 while its part of step 6's save is held 20 s: with
  // --comm-timeout 8 it waits 4 s (half of it), says so, and stops every
  // process. The save never commits; step 4 stays the last checkpoint, whole
  // (a resume checks every file), and the lost-work text counts from it.
  void a_save_that_cannot_end_is_abandoned_and_the_last_one_kept() {
    QTemporaryDir dir;
    const QString root = dir.filePath("ckpt");
    QStringList run = kRun;
    run[run.indexOf("--steps") + 1] = "8";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_SLOW_SAVE", "2:6:20000");
    QElapsedTimer timer;
    timer.start();
    const CliResult r = run_mpi(
        4, run + QStringList{"--save-dir", root, "--save-every", "2", "--inject-failure", "2:7", "--comm-timeout", "8"},
        60000, env);
    const qint64 took_ms = timer.elapsed();
    qInfo("the job ended %lld ms after it started", static_cast<long long>(took_ms));
    QVERIFY2(r.code != 0, qPrintable(failure(r)));
    QVERIFY2(took_ms < 20000,
             qPrintable(QString("took %1 ms: the held save kept the job\n").arg(took_ms) + failure(r)));
    QVERIFY2(r.err.contains("the checkpoint of step 6, still being written, did not end within 4.0 s of waiting for "
                            "it (half of --comm-timeout, at most 30 s): it is abandoned, not committed"),
             qPrintable(failure(r)));
    QVERIFY2(r.err.contains("lost work: the run stopped in step 7; the last checkpoint is step 4 (--save-every 2), "
                            "so a restart from " +
                            root + "/step-000004 runs 2 finished steps again"),
             qPrintable(failure(r)));
    QVERIFY2(!r.out.contains("checkpoint: step 6 saved"), qPrintable(failure(r)));
    QVERIFY(!QFile::exists(root + "/step-000006"));
    const CliResult resumed = run_mpi(4, run + QStringList{"--resume", root}, 60000);
    QVERIFY2(resumed.code == 0, qPrintable(failure(resumed)));
    QVERIFY2(resumed.out.contains("resumed from " + root + "/step-000004 at step 4"), qPrintable(failure(resumed)));
  }

  // A job refused for its input (exit code 2) is not restarted: it would fail the same way.
  void a_refused_job_is_not_restarted() {
    const CliResult r = run_cli(QStringList{"launch", "--nproc-per-node", "4", "--max-restarts", "3", "--"} + kRun +
                                QStringList{"--data", "/no/such/file.txt"});
    QCOMPARE(r.code, 2);
    QVERIFY2(!r.err.contains("launch: restart"), qPrintable(failure(r)));
  }
};

QTEST_GUILESS_MAIN(TestMpiCheckpoint)
#include "test_mpi_checkpoint.moc"
