// SPDX-License-Identifier: GPL-3.0-or-later
// "One step, slowly": the cursor the ZeRO view and LayerView's views replay a
// step with. A view keeps the last three steps' events it draws (keep); a
// replay of one of them takes its events by end time and spreads the step over
// max(its length, 2 s) / speed of wall time (speed above 1x counts as 1x, so a
// step is never shown faster than it ran); each timer tick takes the events
// whose end the wall clock has reached (due) until the step's end (finished).
// The view decides what to do with them: put its live model aside at the start,
// feed the replayed ones to the model it draws, and take the live one back.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "events/event.h"

namespace shardscope::ui {

class StepReplay {
 public:
  // Keeps the events of a step (step > 0) that `keeps` picks; the last three steps stay.
  template <typename Keeps>
  void keep(const std::vector<Event>& events, Keeps keeps) {
    for (const Event& e : events)
      if (e.step > 0 && keeps(e)) kept_[e.step].push_back(e);
    while (kept_.size() > 3) kept_.erase(kept_.begin());  // the step replayed is the last completed one
  }
  void forget() { kept_.clear(); }

  // Starts replaying a kept step from now; false (nothing changed) when none of its events is kept.
  bool start(std::int64_t step, double speed);
  // The step's events whose end the wall clock has reached since the last call, by end time.
  std::vector<Event> due();
  // After due(): whether it reached the step's end (the replay is over).
  bool finished() const { return finished_; }
  // The replayed step's earliest start (ns on the events' clock).
  std::int64_t fromNs() const { return from_ns_; }

 private:
  std::map<std::int64_t, std::vector<Event>> kept_;  // the latest steps' events, by step
  std::vector<Event> replay_;                        // the step being replayed, by end time
  std::size_t replayed_ = 0;
  std::int64_t from_ns_ = 0, to_ns_ = 0;
  std::chrono::steady_clock::time_point started_;
  double ms_ = 0.0;  // the replay's wall-clock length
  bool finished_ = false;
};

}  // namespace shardscope::ui
