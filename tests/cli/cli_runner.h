// SPDX-License-Identifier: GPL-3.0-or-later
// Runs shardscope-cli as a user would, for the CLI test suites.
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

struct CliResult {
  int code;  // exit code; -1 timed out, -2 crashed
  QString out, err;
};

inline CliResult run_cli(const QStringList& args,
                         const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(SHARDSCOPE_CLI, args);
  if (!p.waitForFinished(300000)) return {-1, {}, "timed out"};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}
