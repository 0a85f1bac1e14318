// SPDX-License-Identifier: GPL-3.0-or-later
#include "log_sink.h"

#include <spdlog/pattern_formatter.h>

#include <memory>

namespace shardscope::ui {

QueuedLogSink::QueuedLogSink() {
  // "14:03:07.123 warning rank 1 step 3: ..." (wall-clock time of the message).
  set_formatter_(std::make_unique<spdlog::pattern_formatter>("%H:%M:%S.%e %l %v", spdlog::pattern_time_type::local,
                                                             std::string()));
}

void QueuedLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  std::string text(formatted.data(), formatted.size());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (lines_.size() >= kMaxQueued) {
    lines_.pop_front();
    ++dropped_;
  }
  lines_.push_back(Line{msg.level, std::move(text)});
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
