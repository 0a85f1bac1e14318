// SPDX-License-Identifier: GPL-3.0-or-later
// Training and eval loss against the optimizer step (QCustomPlot), fed from
// step_metrics events. Points are added as they arrive; replot() is left to
// the caller so a burst of events costs one redraw.
#pragma once

#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace shardscope::ui {

class LossPlot : public QWidget {
  Q_OBJECT

 public:
  explicit LossPlot(QWidget* parent = nullptr);

  void clear();
  void addTrainLoss(double step, double loss);
  void addEvalLoss(double step, double loss);
  void replot();  // rescales and redraws if anything changed since the last call

  int trainPointCount() const;
  int evalPointCount() const;
  QCustomPlot* plot() const { return plot_; }
  QString title() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();  // title, axis labels and legend names in the current language

  QCustomPlot* plot_;
  QCPGraph* train_;
  QCPGraph* eval_;
  QCPTextElement* title_;
  bool dirty_ = false;
};

}  // namespace shardscope::ui
