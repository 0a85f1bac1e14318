// SPDX-License-Identifier: GPL-3.0-or-later
// The "Live plots" tab: loss scale (log axis, overflow markers), throughput
// (total and per rank) and memory over time, in one grid. Each plot is an
// EventView of its own; this container hands every batch to all three.
#pragma once

#include <QWidget>

#include "views/event_view.h"

namespace shardscope::ui {

class LossScalePlot;
class ThroughputPlot;
class MemoryTimelinePlot;

class LivePlots : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit LivePlots(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  LossScalePlot* lossScale() const { return loss_scale_; }
  ThroughputPlot* throughput() const { return throughput_; }
  MemoryTimelinePlot* memoryTimeline() const { return memory_; }

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  LossScalePlot* loss_scale_;
  ThroughputPlot* throughput_;
  MemoryTimelinePlot* memory_;
};

}  // namespace shardscope::ui
