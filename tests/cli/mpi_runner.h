// SPDX-License-Identifier: GPL-3.0-or-later
// Runs shardscope-cli under mpirun and reads its per-step losses, for the MPI
// test suites (test_mpi.cpp: ranks on the CPU; test_mpi_nccl.cpp: on GPUs).
#pragma once

#include <unistd.h>

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>
#include <QProcess>
#include <QProcessEnvironment>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <vector>

#include "cli/cli_runner.h"

inline QStringList mpirun_flags() {
  QStringList args;
  if (geteuid() == 0) args << "--allow-run-as-root";
  return args << "--oversubscribe";
}

inline QStringList mpirun_prefix(int processes) {
  return mpirun_flags() << "-np" << QString::number(processes) << SHARDSCOPE_CLI;
}

// mpirun's MPMD form: process `apart` runs `apart_command` (its program
// first: `env VAR=value` and shardscope-cli, or other flags), the others
// shardscope-cli `args`; so one rank alone can fail.
inline QStringList mpirun_one_apart(int processes, int apart, const QStringList& args,
                                    const QStringList& apart_command) {
  QStringList out = mpirun_flags();
  if (apart > 0) out << "-np" << QString::number(apart) << SHARDSCOPE_CLI << args << ":";
  out << "-np" << "1" << apart_command;
  if (apart + 1 < processes)
    out << ":" << "-np" << QString::number(processes - apart - 1) << SHARDSCOPE_CLI << args;
  return out;
}

inline CliResult run_mpirun(const QStringList& mpirun_args, int timeout_ms = 120000,
                            const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start("mpirun", mpirun_args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

inline CliResult run_mpi(int processes, const QStringList& args, int timeout_ms = 120000,
                         const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return run_mpirun(mpirun_prefix(processes) + args, timeout_ms, env);
}

// The ranks in `ranks` whose stderr line ("error: rank R: ...", "error: rank R failed") says none of
// `causes` (their own error, or the abort they received), as a failure message
// with the whole stderr; empty when every one of them says one.
inline QString ranks_not_saying(const QString& err, const QList<int>& ranks, const QStringList& causes) {
  for (const int rank : ranks) {
    bool named = false;
    const QString colon = QString("error: rank %1: ").arg(rank), space = QString("error: rank %1 ").arg(rank);
    for (const QString& line : err.split('\n'))
      for (const QString& cause : causes)
        named = named || ((line.contains(colon) || line.contains(space)) && line.contains(cause));
    if (!named) return QString("rank %1 did not say '%2':\n").arg(rank).arg(causes.join("' or '")) + err;
  }
  return {};
}

// Every process's error line names its own rank once and `cause` (which names
// the failing rank), and no line names a rank twice in a row ("rank 2: rank 2:").
inline QString not_named_once(const CliResult& r, int processes, const QString& cause) {
  QList<int> ranks;
  for (int rank = 0; rank < processes; ++rank) ranks << rank;
  if (const QString unnamed = ranks_not_saying(r.err, ranks, {cause}); !unnamed.isEmpty()) return unnamed;
  for (int rank = 0; rank < processes; ++rank)
    if (r.err.contains(QString("rank %1: rank %1").arg(rank)))
      return QString("rank %1 named twice:\n").arg(rank) + r.err;
  return {};
}

// The per-step values of `key` in a --metrics-out file ("loss"; "eval_loss" where there is one).
inline std::vector<double> losses(const QString& path, const QString& key = "loss") {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  std::vector<double> out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonValue value = QJsonDocument::fromJson(line).object().value(key);
    if (!line.trimmed().isEmpty() && value.isDouble()) out.push_back(value.toDouble());
  }
  return out;
}

// The largest relative difference between two loss curves of `steps` steps.
inline double worst_difference(const std::vector<double>& a, const std::vector<double>& b, std::size_t steps = 20) {
  if (a.size() != steps || b.size() != steps) return 1e9;
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(a[i]), 1e-12));
  return worst;
}

// The pid of global rank `rank` among mpirun's children (Open MPI sets OMPI_COMM_WORLD_RANK).
inline qint64 rank_pid(qint64 mpirun, int rank) {
  QProcess pgrep;
  pgrep.start("pgrep", {"-P", QString::number(mpirun)});
  pgrep.waitForFinished();
  for (const QByteArray& pid : pgrep.readAllStandardOutput().split('\n')) {
    QFile environment("/proc/" + QString::fromLatin1(pid.trimmed()) + "/environ");
    if (pid.trimmed().isEmpty() || !environment.open(QIODevice::ReadOnly)) continue;
    if (environment.readAll().split('\0').contains("OMPI_COMM_WORLD_RANK=" + QByteArray::number(rank)))
      return pid.trimmed().toLongLong();
  }
  return -1;
}

// A job that one rank's process leaves mid-run: mpirun `args` on `processes`
// processes; once the job prints its first step, rank `rank` gets `signal`
// (SIGKILL: it dies; SIGSTOP: it hangs). The job is waited for `limit_ms`,
// then killed (the stopped rank too).
struct SignalledJob {
  qint64 victim = -1;     // the rank's pid; -1 if it was not found
  bool finished = false;  // within limit_ms of the signal
  qint64 took_ms = 0;
  bool failed = false;  // exit code not 0, or ended by a signal
  QString err;
};

inline SignalledJob signal_rank_mid_run(int processes, const QStringList& args, int rank, int signal, int limit_ms,
                                        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  SignalledJob out;
  QProcess job;
  job.setProcessEnvironment(env);
  job.start("mpirun", mpirun_prefix(processes) + args);
  if (!job.waitForStarted()) return out;
  for (int i = 0; i < 1200 && !job.readAllStandardOutput().contains("step "); ++i) job.waitForReadyRead(100);
  out.victim = rank_pid(job.processId(), rank);
  if (out.victim > 0) {
    QElapsedTimer timer;
    timer.start();
    ::kill(static_cast<pid_t>(out.victim), signal);
    out.finished = job.waitForFinished(limit_ms);
    out.took_ms = timer.elapsed();
  }
  if (!out.finished) {
    if (out.victim > 0) ::kill(static_cast<pid_t>(out.victim), SIGKILL);
    job.kill();
    job.waitForFinished();
  }
  out.failed = job.exitCode() != 0 || job.exitStatus() != QProcess::NormalExit;
  out.err = QString::fromUtf8(job.readAllStandardError());
  return out;
}

// What is wrong with a job whose rank `rank` was killed (signal_rank_mid_run,
// SIGKILL): it did not end within its limit, ended well, or a survivor's error
// does not name the dead rank and its pid. Empty when all is right.
inline QString killed_rank_problem(const SignalledJob& job, int processes, int rank) {
  if (job.victim <= 0) return QString("rank %1's process was not found").arg(rank);
  if (!job.finished) return QString("the job still ran after rank %1 was killed:\n").arg(rank) + job.err;
  if (!job.failed) return "the job exited 0:\n" + job.err;
  QList<int> survivors;
  for (int r = 0; r < processes; ++r)
    if (r != rank) survivors << r;
  return ranks_not_saying(job.err, survivors, {QString("rank %1 (pid %2) died").arg(rank).arg(job.victim)});
}
