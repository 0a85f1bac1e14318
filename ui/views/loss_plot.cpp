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
  train_->setName(tr("Training loss"));
  eval_->setName(tr("Eval loss"));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LossPlot::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

QString LossPlot::title() const { return title_->text(); }

void LossPlot::clear() {
  train_->data()->clear();
  eval_->data()->clear();
  dirty_ = true;
  replot();
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
  if (!train_->data()->isEmpty()) {
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
int LossPlot::evalPointCount() const { return eval_->dataCount(); }

}  // namespace shardscope::ui
