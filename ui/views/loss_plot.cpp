// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/loss_plot.h"

#include <QEvent>

#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

namespace shardscope::ui {

LossPlot::LossPlot(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  title_ = installTitledPlot(this, plot_, 200);
  train_ = plot_->addGraph();
  train_->setPen(QPen(QColor(31, 119, 180), 2));
  eval_ = plot_->addGraph();
  eval_->setPen(QPen(QColor(255, 127, 14), 2));
  eval_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
  // graph(2), on a layer under the others: the current run's graphs stay graph(0) and graph(1).
  plot_->addLayer(QStringLiteral("previous run"), plot_->layer(QStringLiteral("main")), QCustomPlot::limBelow);
  previous_ = plot_->addGraph();
  previous_->setLayer(QStringLiteral("previous run"));
  previous_->setPen(QPen(QColor(150, 150, 150), 2, Qt::DashLine));
  plot_->legend->setVisible(true);
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot_->xAxis->setRange(0, 10);
  plot_->yAxis->setRange(0, 6);
  retranslate();
}

void LossPlot::retranslate() {
  title_->setText(tr("Loss"));
  plot_->xAxis->setLabel(tr("Step"));
  plot_->yAxis->setLabel(tr("Cross-entropy loss"));
  train_->setName(label_.isEmpty() ? tr("Training loss") : tr("Training loss (%1)").arg(label_));
  eval_->setName(tr("Eval loss"));
  previous_->setName(pinned_ ? tr("Pinned run (%1)").arg(previous_label_)
                             : tr("Previous run (%1)").arg(previous_label_));
  // Pinned: a wide light band under the current curve, visible where the two coincide.
  previous_->setPen(pinned_ ? QPen(QColor(150, 150, 150, 150), 6) : QPen(QColor(150, 150, 150), 2, Qt::DashLine));
  if (previous_->data()->isEmpty())
    previous_->removeFromLegend();
  else
    previous_->addToLegend();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LossPlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString LossPlot::title() const { return title_->text(); }

void LossPlot::startRun(const QString& label) {
  if (!train_->data()->isEmpty() && !pinned_) {
    previous_->data()->set(*train_->data());
    previous_label_ = label_;
  }
  label_ = label;
  train_->data()->clear();
  eval_->data()->clear();
  retranslate();
  dirty_ = true;
  replot();
}

void LossPlot::pin() {
  if (train_->data()->isEmpty()) return;
  previous_->data()->set(*train_->data());
  previous_label_ = label_;
  pinned_ = true;
  retranslate();
  dirty_ = true;
  replot();
}

void LossPlot::unpin() {
  pinned_ = false;
  previous_->data()->clear();
  previous_label_.clear();
  retranslate();
  dirty_ = true;
  replot();
}

void LossPlot::clear() {
  pinned_ = false;
  train_->data()->clear();  // so that startRun keeps nothing
  previous_->data()->clear();
  previous_label_.clear();
  startRun(QString());
}

void LossPlot::addTrainLoss(double step, double loss) {
  train_->addData(step, loss);
  dirty_ = true;
}

void LossPlot::addEvalLoss(double step, double loss) {
  eval_->addData(step, loss);
  dirty_ = true;
}

void LossPlot::replot() {
  if (!dirty_) return;
  dirty_ = false;
  if (!train_->data()->isEmpty() || !previous_->data()->isEmpty()) {
    plot_->rescaleAxes();
    const QCPRange x = plot_->xAxis->range();
    plot_->xAxis->setRange(0, std::max(x.upper, 1.0) + 0.5);
    const QCPRange y = plot_->yAxis->range();
    const double pad = std::max(0.05, 0.05 * y.size());
    plot_->yAxis->setRange(std::max(0.0, y.lower - pad), y.upper + pad);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

int LossPlot::trainPointCount() const { return train_->dataCount(); }
std::vector<std::pair<double, double>> LossPlot::trainPoints() const {
  std::vector<std::pair<double, double>> out;
  for (auto it = train_->data()->constBegin(); it != train_->data()->constEnd(); ++it) out.emplace_back(it->key, it->value);
  return out;
}
int LossPlot::evalPointCount() const { return eval_->dataCount(); }
int LossPlot::previousPointCount() const { return previous_->dataCount(); }
QString LossPlot::previousName() const { return previous_->data()->isEmpty() ? QString() : previous_->name(); }

}  // namespace shardscope::ui
