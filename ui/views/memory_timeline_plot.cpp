// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/memory_timeline_plot.h"

#include <QEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "views/plot_legend.h"
#include "views/plot_ticks.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

MemoryTimelinePlot::MemoryTimelinePlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("memoryTimelinePlot"));
  title_ = installTitledPlot(this, plot_, 150);
  placeLegendBelow(plot_, 4);
  spaceValueTicks(plot_);
  plot_->xAxis->setRange(0, 1);
  plot_->yAxis->setRange(0, 1);
  retranslate();
}

void MemoryTimelinePlot::retranslate() {
  title_->setText(tr("Memory over time (ledger total per rank)"));
  plot_->xAxis->setLabel(virtual_clock_ ? tr("Virtual time (s)") : tr("Time (s)"));
  plot_->yAxis->setLabel(tr("MiB"));
  for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->setName(tr("Rank %1").arg(r));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryTimelinePlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString MemoryTimelinePlot::title() const {
  return title_->text();
}

int MemoryTimelinePlot::pointCount(int rank) const {
  return rank >= 0 && rank < rankCount() ? ranks_[static_cast<std::size_t>(rank)]->dataCount() : 0;
}

std::int64_t MemoryTimelinePlot::lastTotalBytes(int rank) const {
  return rank >= 0 && rank < rankCount() ? last_total_[static_cast<std::size_t>(rank)] : -1;
}

void MemoryTimelinePlot::reset(const RunPlan& run) {
  const RunConfig& config = run.config();
  for (QCPGraph* g : ranks_) plot_->removeGraph(g);
  ranks_.clear();
  const int world = std::max(1, config.world_size());
  for (int r = 0; r < world; ++r) {
    QCPGraph* g = plot_->addGraph();
    g->setPen(QPen(rankColor(r), 1.5));
    ranks_.push_back(g);
  }
  last_total_.assign(static_cast<std::size_t>(world), -1);
  virtual_clock_ = config.clock == ClockKind::virtual_device;
  steps_ = std::max<std::int64_t>(1, config.steps);
  last_step_ = 0;
  last_s_ = 0.0;
  retranslate();
  dirty_ = true;
  refresh();
}

void MemoryTimelinePlot::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind != EventKind::memory_sample || e.rank < 0 || e.rank >= rankCount()) continue;
    std::int64_t total = 0;
    for (std::int64_t bytes : e.memory) total += bytes;
    const auto r = static_cast<std::size_t>(e.rank);
    ranks_[r]->addData(static_cast<double>(e.end_ns) / 1e9, static_cast<double>(total) / kMiB);
    last_step_ = std::max(last_step_, e.step);
    last_s_ = std::max(last_s_, static_cast<double>(e.end_ns) / 1e9);
    last_total_[r] = total;
    dirty_ = true;
  }
}

void MemoryTimelinePlot::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  if (std::any_of(ranks_.begin(), ranks_.end(), [](QCPGraph* g) { return g->dataCount() > 0; })) {
    plot_->rescaleAxes();
    // The run so far, scaled to all its steps (a resumed run starts past 0: it only grows less).
    const double whole = last_step_ > 0 && last_step_ < steps_ ? last_s_ * static_cast<double>(steps_) / last_step_ : 0;
    plot_->xAxis->setRange(0, std::max(plot_->xAxis->range().upper, whole) * 1.02 + 1e-3);
    plot_->yAxis->setRange(0, plot_->yAxis->range().upper * 1.1 + 1e-3);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope::ui
