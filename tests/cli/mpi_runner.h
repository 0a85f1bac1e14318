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

inline QStringList mpirun_prefix(int processes) {
  QStringList args;
  if (geteuid() == 0) args << "--allow-run-as-root";
  return args << "--oversubscribe"
              << "-np" << QString::number(processes) << SHARDSCOPE_CLI;
}

inline CliResult run_mpi(int processes, const QStringList& args, int timeout_ms = 120000,
                         const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start("mpirun", mpirun_prefix(processes) + args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
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
