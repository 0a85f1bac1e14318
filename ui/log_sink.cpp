// SPDX-License-Identifier: GPL-3.0-or-later
#include "log_sink.h"

#include <spdlog/pattern_formatter.h>

#include <memory>

namespace shardscope::ui {

QueuedLogSink::QueuedLogSink() {
  // The time stamp only: the panel shows "14:03:07.123 warning rank 1 step 3: ...",
  // with the level in the interface's language (MainWindow::drainLog).
  set_formatter_(std::make_unique<spdlog::pattern_formatter>("%H:%M:%S.%e", spdlog::pattern_time_type::local,
                                                             std::string()));
}

void QueuedLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t stamp;
  formatter_->format(msg, stamp);
  std::string text(msg.payload.data(), msg.payload.size());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (lines_.size() >= kMaxQueued) {
    lines_.pop_front();
    ++dropped_;
  }
  lines_.push_back(Line{msg.level, std::string(stamp.data(), stamp.size()), std::move(text)});
}

std::vector<QueuedLogSink::Line> QueuedLogSink::take() {
  std::lock_guard lock(mutex_);
  std::vector<Line> out(std::make_move_iterator(lines_.begin()), std::make_move_iterator(lines_.end()));
  lines_.clear();
  return out;
}

std::size_t QueuedLogSink::droppedLines() {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace shardscope::ui
