// SPDX-License-Identifier: GPL-3.0-or-later
// A view drawn only from engine events. MainWindow resets every view when a
// run starts and hands each one every batch of events the UI timer drains.
#pragma once

#include <cstdint>
#include <vector>

#include "events/event.h"
#include "plan/run_plan.h"

namespace shardscope::ui {

class EventView {
 public:
  virtual ~EventView() = default;
  // A new run starts: forget the old one. `run` is the run's config and plan,
  // made once for the run (plan/run_plan.h); a view copies what it keeps.
  virtual void reset(const RunPlan& run) = 0;
  // Events in the order they were drained (per producer thread in emit order).
  virtual void consume(const std::vector<Event>& events) = 0;
  // Redraw after a batch (called once per UI tick, not per event).
  virtual void refresh() = 0;

  // Slow motion (playback speed below 1): a view that animates on its own
  // clock says it is still drawing events it consumed; the run waits for it
  // between steps (run_controller.h). Views that draw an event when it
  // arrives are never behind.
  virtual bool drawing() const { return false; }
  virtual void setPlaybackSpeed(double /*speed*/) {}
  // "One step, slowly": animate this step again from the events it kept.
  virtual void replayStep(std::int64_t /*step*/) {}
};

}  // namespace shardscope::ui
