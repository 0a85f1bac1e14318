// SPDX-License-Identifier: GPL-3.0-or-later
// The log panel's spdlog sink. Any thread may log through a logger that owns
// it; each formatted line is queued (under the sink's mutex) and the GUI
// thread takes them on its timer and appends them to the log panel. Logging
// never touches a widget, so a worker thread can never block on the UI.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace shardscope::ui {

class QueuedLogSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // The GUI words the level itself (levelName in the main window), so that
  // "info" / "warning" / "error" follow the interface's language.
  struct Line {
    spdlog::level::level_enum level;
    std::string time;  // "14:03:07.123", wall-clock time of the message
    std::string text;  // the message, without the line end
  };
  // Beyond this many untaken lines the oldest are dropped (and counted).
  static constexpr std::size_t kMaxQueued = 10000;

  QueuedLogSink();
  // Takes every queued line, oldest first (thread-safe).
  std::vector<Line> take();
  std::size_t droppedLines();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::deque<Line> lines_;  // guarded by base_sink::mutex_
  std::size_t dropped_ = 0;
};

}  // namespace shardscope::ui
