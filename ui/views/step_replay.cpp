// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/step_replay.h"

#include <algorithm>

namespace shardscope::ui {

bool StepReplay::start(std::int64_t step, double speed) {
  const auto it = kept_.find(step);
  if (it == kept_.end() || it->second.empty()) return false;
  replay_ = it->second;
  std::stable_sort(replay_.begin(), replay_.end(), [](const Event& a, const Event& b) { return a.end_ns < b.end_ns; });
  from_ns_ = replay_.front().start_ns;
  for (const Event& e : replay_) from_ns_ = std::min(from_ns_, e.start_ns);
  to_ns_ = replay_.back().end_ns;
  const double pace = speed > 0 ? std::min(speed, 1.0) : 1.0;
  ms_ = std::max(static_cast<double>(to_ns_ - from_ns_) / 1e6, 2000.0) / pace;
  replayed_ = 0;
  finished_ = false;
  started_ = std::chrono::steady_clock::now();
  return true;
}

std::vector<Event> StepReplay::due() {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
  const double f = std::min(1.0, ms / ms_);
  const auto until = from_ns_ + static_cast<std::int64_t>(f * static_cast<double>(to_ns_ - from_ns_));
  std::vector<Event> batch;
  while (replayed_ < replay_.size() && replay_[replayed_].end_ns <= until) batch.push_back(replay_[replayed_++]);
  finished_ = f >= 1.0;
  return batch;
}

}  // namespace shardscope::ui
