// SPDX-License-Identifier: GPL-3.0-or-later
#include "process_job.h"

#include "config/run_schema.h"

namespace shardscope::ui {
namespace {

// A job that failed before its stream connected has nothing on the way; one
// that connected is over when its stream ended. This covers the moment between
// the launcher's exit and the collector accepting a connection already made.
constexpr qint64 kUnconnectedGraceMs = 1000;

// The first error line of the launcher's stderr (the failing rank says which it is).
QString errorLine(const QString& stderr_text) {
  for (const QString& line : stderr_text.split('\n')) {
    const qsizetype at = line.indexOf(QStringLiteral("error: "));
    if (at >= 0) return line.mid(at + 7).trimmed();
  }
  return stderr_text.trimmed().right(400);
}

}  // namespace

ProcessJob::ProcessJob(int port, EventSink* sink, QObject* parent)
    : QObject(parent), collector_("127.0.0.1", port, sink) {}

ProcessJob::~ProcessJob() {
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->terminate();
    if (!process_->waitForFinished(3000)) process_->kill();
    process_->waitForFinished(1000);
  }
}

QStringList ProcessJob::launchArguments(const RunConfig& config, int port, int max_restarts) {
  QStringList args{QStringLiteral("launch"), QStringLiteral("--nproc-per-node"), QString::number(config.world_size())};
  if (max_restarts > 0) args << QStringLiteral("--max-restarts") << QString::number(max_restarts);
  args << QStringLiteral("--") << QStringLiteral("train");
  for (const std::string& flag : run_config_flags(config)) args << QString::fromStdString(flag);
  return args << QStringLiteral("--events-to") << QStringLiteral("127.0.0.1:%1").arg(port);
}

void ProcessJob::start(const QString& cli, const RunConfig& config, int max_restarts) {
  process_ = std::make_unique<QProcess>();
  process_->setStandardOutputFile(QProcess::nullDevice());  // the views show what stdout says
  connect(process_.get(), &QProcess::finished, this, &ProcessJob::onExited);
  connect(process_.get(), &QProcess::readyReadStandardError, this, &ProcessJob::onStandardError);
  connect(process_.get(), &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) onExited(-1, QProcess::CrashExit);
  });
  process_->start(cli, launchArguments(config, port(), max_restarts));
}

void ProcessJob::onStandardError() {
  stderr_text_ += QString::fromUtf8(process_->readAllStandardError());
  for (qsizetype end; (end = stderr_text_.indexOf(QLatin1Char('\n'), scanned_)) >= 0; scanned_ = end + 1) {
    const QString line = stderr_text_.mid(scanned_, end - scanned_).trimmed();
    if (line.contains(QStringLiteral("error: ")) || line.startsWith(QStringLiteral("lost work:")) ||
        line.startsWith(QStringLiteral("launch: restart")))
      Q_EMIT launcherLine(line);
  }
}

void ProcessJob::onExited(int code, QProcess::ExitStatus status) {
  if (exited_.isValid()) return;
  exited_.start();
  if (stopped_) return;
  ok_ = status == QProcess::NormalExit && code == 0;
  if (ok_) return;
  onStandardError();  // what is left
  const QString& err = stderr_text_;
  message_ = code == -1 ? process_->errorString() + QStringLiteral(": ") + process_->program() : errorLine(err);
}

void ProcessJob::stop() {
  stopped_ = true;
  message_ = tr("stopped");
  if (process_ && process_->state() != QProcess::NotRunning) {
    process_->terminate();  // mpirun passes SIGTERM on to every rank
    return;
  }
  collector_.stop();
}

bool ProcessJob::finished() const {
  const int opened = collector_.streams_opened(), ended = collector_.streams_ended();
  if (!process_) return stopped_ || (opened > 0 && ended == opened);
  if (!exited_.isValid()) return false;
  return ended == opened && (opened > 0 || exited_.elapsed() > kUnconnectedGraceMs || stopped_);
}

}  // namespace shardscope::ui
