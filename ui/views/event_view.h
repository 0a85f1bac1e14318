// SPDX-License-Identifier: GPL-3.0-or-later
// A view drawn only from engine events. MainWindow resets every view when a
// run starts and hands each one every batch of events the UI timer drains.
#pragma once

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
};

}  // namespace shardscope::ui
