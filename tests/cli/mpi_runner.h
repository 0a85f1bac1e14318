// SPDX-License-Identifier: GPL-3.0-or-later
// Runs shardscope-cli under mpirun and reads its per-step losses, for the MPI
// test suites (test_mpi.cpp: ranks on the CPU; test_mpi_nccl.cpp: on GPUs).
#pragma once

#include <unistd.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>
#include <QProcess>
#include <QProcessEnvironment>
#include <algorithm>
#include <cmath>
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

// Every process's error line names its own rank once and `cause` (which names
// the failing rank), and no line names a rank twice in a row ("rank 2: rank 2:").
inline QString not_named_once(const CliResult& r, int processes, const QString& cause) {
  for (int rank = 0; rank < processes; ++rank) {
    bool named = false;
    for (const QString& line : r.err.split('\n'))
      named = named || (line.contains(QString("error: rank %1: ").arg(rank)) && line.contains(cause));
    if (!named) return QString("rank %1 did not say '%2':\n").arg(rank).arg(cause) + r.err;
  }
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
