// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/throughput_plot.h"

#include <QEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

ThroughputPlot::ThroughputPlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("throughputPlot"));
  title_ = installTitledPlot(this, plot_, 150);
  total_ = plot_->addGraph();
  total_->setPen(QPen(Qt::black, 2));
  placeLegendBelow(plot_, 3);  // "Total" and two ranks a row: the plot stays narrow
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0, 1000);
  retranslate();
}

void ThroughputPlot::retranslate() {
  title_->setText(tr("Throughput"));
  plot_->xAxis->setLabel(tr("Step"));
  plot_->yAxis->setLabel(tr("Tokens/s"));
  total_->setName(tr("Total (step metrics)"));
  for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->setName(tr("Rank %1").arg(r));
  setToolTip(
      tr("Total: the engine's tokens/s of each optimizer step (global batch \u00d7 sequence length / step "
         "time).\nRank r: the tokens of its data-parallel replica per step (global batch \u00d7 sequence "
         "length / dp) divided by the time between the ends of r's consecutive optimizer spans.\nEvery "
         "pipeline stage of a replica sees all of its tokens; a slow rank falls below the others."));
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
int ThroughputPlot::rankPointCount(int rank) const {
  return rank >= 0 && rank < static_cast<int>(ranks_.size()) ? ranks_[static_cast<std::size_t>(rank)]->dataCount() : 0;
}

std::vector<std::pair<double, double>> ThroughputPlot::rankPoints(int rank) const {
  std::vector<std::pair<double, double>> points;
  if (rank < 0 || rank >= static_cast<int>(ranks_.size())) return points;
  const QCPGraph* g = ranks_[static_cast<std::size_t>(rank)];
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) points.emplace_back(it->key, it->value);
  return points;
}

void ThroughputPlot::reset(const RunConfig& config) {
  total_->data()->clear();
  for (QCPGraph* g : ranks_) plot_->removeGraph(g);
  ranks_.clear();
  const int world = std::max(1, config.world_size());
  for (int r = 0; r < world; ++r) {
    QCPGraph* g = plot_->addGraph();
    g->setPen(QPen(rankColor(r), 1.5, Qt::DashLine));
    ranks_.push_back(g);
  }
  tokens_per_replica_ = static_cast<double>(config.batch) * config.seq / std::max(1, config.dp);
  first_start_ns_.assign(static_cast<std::size_t>(world), -1);
  last_optimizer_end_ns_.assign(static_cast<std::size_t>(world), -1);
  retranslate();
  dirty_ = true;
  refresh();
}

void ThroughputPlot::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics) {
      total_->addData(static_cast<double>(e.step), static_cast<double>(e.tokens_per_s));
      dirty_ = true;
    } else if (e.kind == EventKind::compute_span && e.rank >= 0 && e.rank < static_cast<int>(ranks_.size())) {
      const auto r = static_cast<std::size_t>(e.rank);
      if (first_start_ns_[r] < 0 || e.start_ns < first_start_ns_[r]) {
        if (last_optimizer_end_ns_[r] < 0) first_start_ns_[r] = e.start_ns;
      }
      if (e.compute != ComputeKind::optimizer) continue;
      const std::int64_t since = last_optimizer_end_ns_[r] >= 0 ? last_optimizer_end_ns_[r] : first_start_ns_[r];
      last_optimizer_end_ns_[r] = e.end_ns;
      if (since < 0 || e.end_ns <= since) continue;
      ranks_[r]->addData(static_cast<double>(e.step),
                         tokens_per_replica_ * 1e9 / static_cast<double>(e.end_ns - since));
      dirty_ = true;
    }
  }
}

void ThroughputPlot::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  if (total_->dataCount() > 0 ||
      std::any_of(ranks_.begin(), ranks_.end(), [](QCPGraph* g) { return g->dataCount() > 0; })) {
    plot_->rescaleAxes();
    plot_->xAxis->setRange(0, std::max(plot_->xAxis->range().upper, 1.0) + 0.5);
    plot_->yAxis->setRange(0, plot_->yAxis->range().upper * 1.1 + 1);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope::ui
