// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/live_plots.h"

#include <QGridLayout>
#include <QShowEvent>

#include "views/loss_scale_plot.h"
#include "views/memory_timeline_plot.h"
#include "views/throughput_plot.h"

namespace shardscope::ui {

LivePlots::LivePlots(QWidget* parent)
    : QWidget(parent),
      loss_scale_(new LossScalePlot),
      throughput_(new ThroughputPlot),
      memory_(new MemoryTimelinePlot) {
  setObjectName(QStringLiteral("livePlots"));
  // Loss scale and throughput side by side (both against the step), memory
  // over time (against seconds) across the bottom. The top row gets more of the
  // height: its plots carry a legend of two rows and axis labels of several lines.
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(2, 2, 2, 2);
  grid->addWidget(loss_scale_, 0, 0);
  grid->addWidget(throughput_, 0, 1);
  grid->addWidget(memory_, 1, 0, 1, 2);
  grid->setRowStretch(0, 4);
  grid->setRowStretch(1, 3);
}

void LivePlots::reset(const RunPlan& run) {
  for (EventView* v :
       {static_cast<EventView*>(loss_scale_), static_cast<EventView*>(throughput_), static_cast<EventView*>(memory_)})
    v->reset(run);
}

void LivePlots::consume(const std::vector<Event>& events) {
  loss_scale_->consume(events);
  throughput_->consume(events);
  memory_->consume(events);
}

void LivePlots::refresh() {
  // A hidden tab keeps its data and redraws when shown: QCustomPlot renders
  // into its buffers even when hidden, and the GUI thread's time is the
  // trainer's time on a small machine (bench/ui/bench_ui.cpp).
  if (!isVisible()) return;
  loss_scale_->refresh();
  throughput_->refresh();
  memory_->refresh();
}

}  // namespace shardscope::ui

namespace shardscope::ui {

void LivePlots::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refresh();
}

}  // namespace shardscope::ui
