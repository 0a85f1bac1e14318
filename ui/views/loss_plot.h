// SPDX-License-Identifier: GPL-3.0-or-later
// Training and eval loss against the optimizer step (QCustomPlot), fed from
// step_metrics events. Points are added as they arrive; replot() is left to
// the caller so a burst of events costs one redraw. The previous run's
// training loss stays behind the new one, grey and named by its setup, so two
// runs can be compared (accumulation against a larger batch, checkpointing on
// and off).
#pragma once

#include <QWidget>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace shardscope::ui {

class LossPlot : public QWidget {
  Q_OBJECT

 public:
  explicit LossPlot(QWidget* parent = nullptr);

  // A new run named `label` (e.g. "batch 32 = 8 × 4 accumulation"): the
  // current training curve, if any, becomes the previous run's.
  void startRun(const QString& label);
  void clear();  // both runs
  // Pin (compare two runs): the current training curve stays as the grey
  // curve through every later run, named "Pinned run (label)", until unpin().
  void pin();
  void unpin();
  bool pinned() const { return pinned_; }
  void addTrainLoss(double step, double loss);
  void addEvalLoss(double step, double loss);
  void replot();  // rescales and redraws if anything changed since the last call

  int trainPointCount() const;
  std::vector<std::pair<double, double>> trainPoints() const;  // (step, loss) of the current run
  int evalPointCount() const;
  int previousPointCount() const;
  QString previousName() const;
  QCustomPlot* plot() const { return plot_; }
  QString title() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();  // title, axis labels and legend names in the current language

  QCustomPlot* plot_;
  QCPGraph* train_;
  QCPGraph* eval_;
  QCPGraph* previous_;
  QString label_, previous_label_;  // the runs' setups
  QCPTextElement* title_;
  bool dirty_ = false;
  bool pinned_ = false;
};

}  // namespace shardscope::ui
