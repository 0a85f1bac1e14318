// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/loss_scale_plot.h"

#include <QEvent>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "views/plot_legend.h"
#include "views/plot_ticks.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

LossScalePlot::LossScalePlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  setObjectName(QStringLiteral("lossScalePlot"));
  title_ = installTitledPlot(this, plot_, 150);

  scale_ = plot_->addGraph();
  scale_->setPen(QPen(QColor(44, 160, 44), 2));
  scale_->setLineStyle(QCPGraph::lsStepLeft);
  overflow_graph_ = plot_->addGraph();
  overflow_graph_->setLineStyle(QCPGraph::lsNone);
  overflow_graph_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCross, QPen(QColor(214, 39, 40), 2), Qt::NoBrush, 10));
  // A scale is a power of two: a log axis shows halvings and doublings as equal steps.
  plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new BinaryLogAxisTicker));  // 16Mi = 2^24
  plot_->xAxis->ticker()->setTickCount(4);  // the plot is narrow beside its neighbour: fewer step numbers
  placeLegendBelow(plot_, 2);
  spaceValueTicks(plot_);
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0.5, 2);
  retranslate();
}

void LossScalePlot::retranslate() {
  title_->setText(tr("Loss scale (fp16)"));
  plot_->xAxis->setLabel(tr("Step"));
  plot_->yAxis->setLabel(tr("Loss scale (log)"));
  scale_->setName(tr("Loss scale"));
  overflow_graph_->setName(tr("Overflow: step skipped"));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LossScalePlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString LossScalePlot::title() const {
  return title_->text();
}
int LossScalePlot::scalePointCount() const {
  return scale_->dataCount();
}

void LossScalePlot::reset(const RunPlan&) {
  scale_->data()->clear();
  overflow_graph_->data()->clear();
  overflows_.clear();
  dirty_ = true;
  refresh();
}

void LossScalePlot::markOverflow(std::int64_t step, double scale) {
  if (!overflows_.emplace(step, scale).second) return;  // every rank reports it: one marker per step
  overflow_graph_->addData(static_cast<double>(step), scale);
}

void LossScalePlot::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics) {
      const double scale = std::max(1e-30, static_cast<double>(e.loss_scale));
      scale_->addData(static_cast<double>(e.step), scale);
      if (e.skipped) markOverflow(e.step, scale);
      dirty_ = true;
    } else if (e.kind == EventKind::overflow) {
      markOverflow(e.step, std::max(1e-30, static_cast<double>(e.loss_scale)));
      dirty_ = true;
    }
  }
}

void LossScalePlot::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  double lo = 1, hi = 1, last_step = 1;
  bool any = false;
  for (const QCPGraph* g : {scale_, overflow_graph_})
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
      lo = any ? std::min(lo, it->value) : it->value;
      hi = any ? std::max(hi, it->value) : it->value;
      last_step = std::max(last_step, it->key);
      any = true;
    }
  plot_->xAxis->setRange(0, last_step + 0.5);
  plot_->yAxis->setRange(lo / 2, hi * 2);  // one power of two of margin each side
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace shardscope::ui
