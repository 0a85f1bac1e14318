// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/throughput_plot.h"

#include <QEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "views/plot_legend.h"
#include "views/plot_ticks.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

ThroughputPlot::ThroughputPlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("throughputPlot"));
  title_ = installTitledPlot(this, plot_, 150);
  // One entry a row, the two labelled totals only: their labels are long, and the
  // ranks' dashed lines have the colours of the memory plot's legend below.
  placeLegendBelow(plot_, 1);
  spaceValueTicks(plot_);
  total_ = plot_->addGraph();
  total_->setPen(QPen(Qt::black, 2));
  modeled_ = plot_->addGraph();
  modeled_->setPen(QPen(QColor(0, 128, 128), 2));  // teal: no rank's colour
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0, 1000);
  plot_->yAxis2->setRange(0, 1000);
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new SiAxisTicker));  // 16.8M, not 1.67772·10⁷
  plot_->yAxis2->setTicker(QSharedPointer<QCPAxisTicker>(new SiAxisTicker));
  plot_->xAxis->ticker()->setTickCount(4);  // the plot is narrow beside its neighbour: fewer step numbers
  retranslate();
}

// Each axis label in short lines: the plot is short, and a vertical label longer
// than its axis would run over the title and the legend (the legend names
// each line's clock). (Not in a smaller font:
// rotated, small Chinese characters blur.)
// The left axis holds the modeled line and the ranks (all on the run's clock);
// the right one, shown with a GPU profile only, the measured host line.
QString ThroughputPlot::leftAxisLabel() const {
  if (host_axis_apart_) return tr("modeled on %1\n(virtual clock)").arg(gpu_profile_);
  if (virtual_clock_) return tr("tokens/s: modeled,\nmeasured host");
  return tr("tokens/s (wall clock)");
}

void ThroughputPlot::retranslate() {
  title_->setText(tr("Throughput"));
  plot_->xAxis->setLabel(tr("Step"));
  plot_->yAxis->setLabel(leftAxisLabel());
  plot_->yAxis2->setLabel(tr("measured host\n(wall clock)"));
  // Two lines each: the labels say their clock, and the legend stays as narrow as the plot.
  total_->setName(tr("measured host tokens/s (wall clock)"));
  modeled_->setName(
      tr("modeled tokens/s on %1").arg(gpu_profile_.isEmpty() ? tr("this machine's cores") : gpu_profile_));
  for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->setName(tr("Rank %1").arg(r));
  setToolTip(
      tr("Modeled: the global batch \u00d7 sequence length over the step's time on the virtual clock, the device "
         "each rank is modeled on (the GPU profile's GPU, or this machine's cores: each rank's CPU time). Not "
         "drawn on the wall clock.\nMeasured host: the same tokens over the step's wall time on this machine, "
         "every rank sharing its cores.\nRank r: the tokens of its data-parallel replica per step (global batch "
         "\u00d7 sequence length / dp) divided by the time between the ends of r's consecutive optimizer spans, "
         "on the run's clock; dashed, in the rank's colour of the memory plot.\nEvery pipeline stage of a replica "
         "sees all of its tokens; a slow rank falls below the others."));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ThroughputPlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString ThroughputPlot::title() const {
  return title_->text();
}
int ThroughputPlot::totalPointCount() const {
  return total_->dataCount();
}
QString ThroughputPlot::modeledName() const {
  return modeled_->name();
}
QString ThroughputPlot::measuredName() const {
  return total_->name();
}

namespace {
std::vector<std::pair<double, double>> graphPoints(const QCPGraph* g) {
  std::vector<std::pair<double, double>> points;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) points.emplace_back(it->key, it->value);
  return points;
}
}  // namespace

std::vector<std::pair<double, double>> ThroughputPlot::modeledPoints() const {
  return graphPoints(modeled_);
}
std::vector<std::pair<double, double>> ThroughputPlot::measuredPoints() const {
  return graphPoints(total_);
}
int ThroughputPlot::rankPointCount(int rank) const {
  return rank >= 0 && rank < static_cast<int>(ranks_.size()) ? ranks_[static_cast<std::size_t>(rank)]->dataCount() : 0;
}

std::vector<std::pair<double, double>> ThroughputPlot::rankPoints(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(ranks_.size())) return {};
  return graphPoints(ranks_[static_cast<std::size_t>(rank)]);
}

void ThroughputPlot::reset(const RunPlan& run) {
  const RunConfig& config = run.config();
  total_->data()->clear();
  modeled_->data()->clear();
  // GPU ranks are on the wall clock whatever --clock says (clock/device_clock.h).
  virtual_clock_ = config.clock == ClockKind::virtual_device && config.device == "cpu";
  modeled_->setVisible(virtual_clock_);
  modeled_->removeFromLegend();
  if (virtual_clock_) modeled_->addToLegend();
  gpu_profile_ = config.gpu_profile == "none" ? QString() : QString::fromStdString(config.gpu_profile);
  // A GPU profile models another machine's device, a thousand times faster
  // than the host's shared cores: on one axis the host line lies flat on zero.
  // Without one, both lines count tokens on this machine's cores and stay
  // within a few times of each other (the ranks sharing its cores): one axis,
  // so the gap between them reads as what that sharing costs.
  host_axis_apart_ = virtual_clock_ && !gpu_profile_.isEmpty();
  total_->setValueAxis(host_axis_apart_ ? plot_->yAxis2 : plot_->yAxis);
  plot_->yAxis2->setVisible(host_axis_apart_);
  tokens_per_step_ = static_cast<double>(config.batch) * config.seq;
  last_metrics_ns_ = 0;
  for (QCPGraph* g : ranks_) plot_->removeGraph(g);
  ranks_.clear();
  const int world = std::max(1, config.world_size());
  for (int r = 0; r < world; ++r) {
    QCPGraph* g = plot_->addGraph();
    g->setPen(QPen(rankColor(r), 1.5, Qt::DashLine));
    g->removeFromLegend();
    ranks_.push_back(g);
  }
  tokens_per_replica_ = static_cast<double>(config.batch) * config.seq / std::max(1, config.layout.dp());
  first_start_ns_.assign(static_cast<std::size_t>(world), -1);
  last_optimizer_end_ns_.assign(static_cast<std::size_t>(world), -1);
  retranslate();
  dirty_ = true;
  refresh();
}

void ThroughputPlot::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics)
      addStepMetrics(e);
    else if (e.kind == EventKind::compute_span && e.rank >= 0 && e.rank < static_cast<int>(ranks_.size()))
      addComputeSpan(e);
  }
}

void ThroughputPlot::addStepMetrics(const Event& e) {
  const auto step = static_cast<double>(e.step);
  total_->addData(step, static_cast<double>(e.tokens_per_s));
  if (virtual_clock_ && e.start_ns > last_metrics_ns_)
    modeled_->addData(step, tokens_per_step_ * 1e9 / static_cast<double>(e.start_ns - last_metrics_ns_));
  last_metrics_ns_ = std::max(last_metrics_ns_, e.start_ns);
  dirty_ = true;
}

void ThroughputPlot::addComputeSpan(const Event& e) {
  const auto r = static_cast<std::size_t>(e.rank);
  if (first_start_ns_[r] < 0 || e.start_ns < first_start_ns_[r]) {
    if (last_optimizer_end_ns_[r] < 0) first_start_ns_[r] = e.start_ns;
  }
  if (e.compute != ComputeKind::optimizer) return;
  const std::int64_t since = last_optimizer_end_ns_[r] >= 0 ? last_optimizer_end_ns_[r] : first_start_ns_[r];
  last_optimizer_end_ns_[r] = e.end_ns;
  if (since < 0 || e.end_ns <= since) return;
  ranks_[r]->addData(static_cast<double>(e.step), tokens_per_replica_ * 1e9 / static_cast<double>(e.end_ns - since));
  dirty_ = true;
}

void ThroughputPlot::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  if (total_->dataCount() > 0 || modeled_->dataCount() > 0 ||
      std::any_of(ranks_.begin(), ranks_.end(), [](QCPGraph* g) { return g->dataCount() > 0; })) {
    plot_->rescaleAxes();
    plot_->xAxis->setRange(0, std::max(plot_->xAxis->range().upper, 1.0) + 0.5);
    for (QCPAxis* axis : {plot_->yAxis, plot_->yAxis2}) axis->setRange(0, axis->range().upper * 1.1 + 1);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope::ui
