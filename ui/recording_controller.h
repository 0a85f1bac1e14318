// SPDX-License-Identifier: GPL-3.0-or-later
// Recordings in the GUI: writes a live run's drained events to a .ssrun file
// (on the UI thread, never the engine's), opens a recording for replay and
// exports either one as a Chrome trace. The window replays an opened
// recording through the same path live events take (MainWindow::onEvents).
//
// A recording is written to a temporary beside <path> ("<path>.XXXXXX.part",
// core/output_file.h) and renamed over <path> only when the run ends, so a run
// cut short (window closed) never clobbers an existing file; a path that is the
// run's training text, a link or a device is refused. Errors never throw out of
// here: they arrive as status() signals.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "events/event.h"
#include "plan/run_plan.h"

namespace shardscope {
class RecordingWriter;
}

namespace shardscope::ui {

class RecordingController : public QObject {
  Q_OBJECT

 public:
  explicit RecordingController(QObject* parent = nullptr);
  ~RecordingController() override;

  // --- recording a live run ---
  // The next run started from the window is recorded to `path` (empty: none).
  void setRecordPath(const QString& path);
  QString recordPath() const { return record_path_; }
  bool recording() const { return writer_ != nullptr; }
  // The temporary the run is being written to (empty when not recording).
  QString writingPath() const;
  // The window calls these as a run starts, as its events are drained, and
  // when it ends. beginRun consumes the record path.
  void beginRun(const RunPlan& run);
  void record(const std::vector<Event>& events);
  void endRun();
  // The run ends unfinished (the window closes): the partial file is removed
  // and an existing file at the record path is left as it was.
  void abandonRun() {
    if (writer_) abandonWriter();
  }
  // The file of the last run recorded to the end (empty: none yet).
  QString lastRecordingPath() const { return last_recording_; }

  // --- an opened recording ---
  // Reads the whole file. On failure nothing changes: a status() signal names
  // the file and the reason (offset, key) and false is returned.
  bool open(const QString& path);
  void closeRecording();  // a live run takes the views over
  bool hasRecording() const { return !opened_path_.isEmpty(); }
  QString openedPath() const { return opened_path_; }
  // The recorded run's config, validated, and its plan (made once, when opened).
  const RunPlan& run() const { return *run_; }
  const std::vector<Event>& events() const { return events_; }
  // The latest end time of any event (ns since the run started).
  std::int64_t lastTimeNs() const { return prefix_end_.empty() ? 0 : prefix_end_.back(); }
  // How many events (a prefix, in recorded order) had ended by t_ns: the
  // events the live views had seen at that time.
  std::size_t eventsUpTo(std::int64_t t_ns) const;

  // Writes the opened recording, else the last recorded run, as a Chrome
  // trace (a temporary beside `path`, renamed over it; never over the
  // recording itself). False, with a status() signal, on failure.
  bool exportChromeTrace(const QString& path);

 Q_SIGNALS:
  // A message for the status line and the log; `text` re-words it in the
  // current language when called again.
  void status(std::function<QString()> text, bool error);

 private:
  void fail(std::function<QString()> text);
  void abandonWriter();

  QString record_path_;
  std::unique_ptr<RecordingWriter> writer_;
  QString writing_to_;  // the final path of the run being recorded
  QString last_recording_;

  QString opened_path_;
  RunPlanPtr run_;
  std::string metadata_;
  std::vector<Event> events_;
  std::vector<std::int64_t> prefix_end_;  // running max of end_ns
};

}  // namespace shardscope::ui
