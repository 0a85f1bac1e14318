// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline timeline: a row per pipeline stage and, for one optimizer step
// (the last completed one unless the user picks another), a box per forward,
// backward and recompute span of each micro-batch, coloured by micro-batch, with
// the idle time between boxes shaded as bubble and the measured bubble fraction
// beside the formula's. Zoom with the mouse wheel, pan by dragging, double-click
// to fit, hover a box for its details. Drawn only from compute_span events.
#pragma once

#include <QWidget>

#include <cstdint>
#include <map>
#include <vector>

#include "events/event.h"
#include "plan/grid.h"
#include "views/event_view.h"

class QLabel;
class QSpinBox;

namespace shardscope::ui {

// One box of the timeline, as the engine reported it (times since the run started).
struct TimelineBox {
  int stage = 0;
  int rank = 0;         // global rank (always the stage's data-parallel rank 0, see PipelineTimelineView)
  int micro_batch = 0;  // counts on across accumulation micro-steps
  ComputeKind kind = ComputeKind::forward;  // forward, backward or recompute
  int layer = -1;       // -1 for a whole-stage forward/backward; a layer for a recompute
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

class TimelineCanvas;

class PipelineTimelineView : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit PipelineTimelineView(QWidget* parent = nullptr);
  ~PipelineTimelineView() override;

  void reset(const RunConfig& config) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  // The boxes of a step (empty if none): whole-stage forwards and backwards
  // (layer == -1), plus the per-layer recompute spans of checkpointed runs, which
  // lie inside their backward box.
  const std::vector<TimelineBox>& boxes(std::int64_t step) const;
  // 1 - busy / (stages * makespan) over the forwards and backwards of the step;
  // 0 for a step without boxes.
  double measured_bubble(std::int64_t step) const;
  // GPipe's (p - 1) / (m + p - 1) for the run's stages and the micro-batches of
  // one pipeline flush. With gradient accumulation k the engine runs the
  // schedule k times per optimizer step (Trainer::rank_step), each flush filling
  // and draining the pipeline, so m stays the micro-batches per flush even though
  // the step shows k·m of them (F0..F(k·m−1)).
  double formula_bubble() const;
  // The same formula if all k·m micro-batches of the step ran in one flush.
  double one_flush_bubble() const;
  // The line shown above the rows, e.g. "bubble measured 31% · (p−1)/(m+p−1) = 27%";
  // with accumulation it also says how many flushes of how many micro-batches ran.
  QString bubbleText(std::int64_t step) const;
  // The step drawn now: the picked one, else the last completed one (0: none yet).
  std::int64_t shownStep() const;
  std::int64_t lastCompletedStep() const { return last_completed_; }
  int stages() const { return grid_.pp(); }

 protected:
  void changeEvent(QEvent* event) override;

 private:
  friend class TimelineCanvas;
  void updateHeader();
  void retranslate();

  TimelineCanvas* canvas_;
  QSpinBox* step_box_;
  QLabel* bubble_label_;
  QLabel* step_label_;
  Grid grid_{1, 1};  // the run's dp x pp grid: a row per stage, drawn from the stage's dp rank 0
  int micro_batches_ = 1;  // m: per pipeline flush
  int accumulation_ = 1;   // k: flushes per optimizer step
  std::map<std::int64_t, std::vector<TimelineBox>> steps_;
  std::int64_t last_completed_ = 0;  // the newest step with a step_metrics event
  std::int64_t last_seen_ = 0;       // the newest step with any box
  bool dirty_ = false;
};

}  // namespace shardscope::ui
