// SPDX-License-Identifier: GPL-3.0-or-later
// Slow motion for teaching. The views replay each optimizer step's events at a
// fraction of real time: an event is handed on once the replay clock, which
// runs at `speed` times the wall clock from the step's first event, has passed
// the event's end time. So a step whose events span D seconds is shown over
// D / speed seconds. The RunController holds the trainer between steps until
// the step is replayed (see run_controller.h), so nothing piles up.
//
// Plain C++ with the wall clock passed in (now_ns), so tests drive it with a
// fake clock.
#pragma once

#include <cstdint>
#include <vector>

#include "events/event.h"

namespace shardscope::ui {

class PlaybackPacer {
 public:
  // 1 (or more): real time, every event is released as soon as it arrives.
  void setSpeed(double speed) { speed_ = speed; }
  double speed() const { return speed_; }
  bool realTime() const { return speed_ >= 1.0; }

  // Events drained at wall time now_ns. The first events after a step boundary
  // anchor the replay clock: (now_ns, their earliest start).
  void push(const std::vector<Event>& events, std::int64_t now_ns);
  // Appends the events due at wall time now_ns, in arrival order.
  void release(std::int64_t now_ns, std::vector<Event>& out);
  // Appends every pending event at once (Stop: nothing is left waiting).
  void flush(std::vector<Event>& out);
  // The step's events are all released: the next push re-anchors the clock
  // (the time the trainer waited between steps is not replayed).
  void endStep() { anchored_ = false; }

  bool empty() const { return pending_.empty(); }
  std::size_t pending() const { return pending_.size(); }
  // The replay clock at wall time now_ns, in event time (ns since the run started).
  std::int64_t replayTimeNs(std::int64_t now_ns) const;

 private:
  double speed_ = 1.0;
  std::vector<Event> pending_;
  bool anchored_ = false;
  std::int64_t wall0_ns_ = 0;
  std::int64_t event0_ns_ = 0;
};

}  // namespace shardscope::ui
