// SPDX-License-Identifier: GPL-3.0-or-later
// A job whose ranks are processes, watched through its event stream
// (engine/events/event_stream.h): the GUI listens on a port of this machine
// and the job's rank 0 streams every rank's events to it. Either the GUI
// starts the job (`shardscope-cli launch --nproc-per-node N -- train <the
// run's flags> --events-to 127.0.0.1:PORT`, a QProcess), or a job started from
// a shell with `--events-to 127.0.0.1:PORT` connects (File → Attach…).
// Events arrive on the collector's thread into the sink; the GUI thread only
// asks whether the job has ended, so it never waits.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QString>
#include <memory>

#include "config/run_config.h"
#include "events/event_stream.h"

namespace shardscope::ui {

class ProcessJob : public QObject {
  Q_OBJECT

 public:
  // Listens on 127.0.0.1:port (0: a free port). Throws ConfigError (the port in use).
  ProcessJob(int port, EventSink* sink, QObject* parent = nullptr);
  ~ProcessJob() override;  // ends a job it started

  int port() const { return collector_.port(); }
  // Starts the launcher (`cli`: the shardscope-cli executable) for `config`;
  // with max_restarts > 0 it restarts a failed job from its latest checkpoint
  // (launch --max-restarts, app/cli_restart.h) and the new run's stream connects here too.
  void start(const QString& cli, const RunConfig& config, int max_restarts = 0);
  // Ends the job: terminates the launcher (mpirun stops every rank), or for an
  // attached job stops listening.
  void stop();
  // The job is over and its events have all arrived (or it was stopped).
  bool finished() const;
  // After finished(): whether the job succeeded, and what to say (the failing
  // rank's error, from the launcher's stderr; "stopped"; empty).
  bool ok() const { return ok_; }
  QString message() const { return message_; }
  // The run config of the attached job (its stream's metadata); empty until it connects.
  std::string metadataJson() const { return collector_.metadata_json(); }
  static QStringList launchArguments(const RunConfig& config, int port, int max_restarts = 0);

 Q_SIGNALS:
  // A line of the launcher's stderr a user should read as it happens: a rank's
  // error (the watchdog's detection), the work a failure lost, a restart.
  void launcherLine(const QString& line);

 private:
  void onExited(int code, QProcess::ExitStatus status);
  void onStandardError();

  EventCollector collector_;
  std::unique_ptr<QProcess> process_;  // null: attached
  QElapsedTimer exited_;               // started when the launcher exited
  bool stopped_ = false;
  bool ok_ = true;
  QString message_;
  QString stderr_text_;    // everything the launcher wrote on stderr
  qsizetype scanned_ = 0;  // stderr_text_ up to here was looked at for launcherLine
};

}  // namespace shardscope::ui
