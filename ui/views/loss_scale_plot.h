// SPDX-License-Identifier: GPL-3.0-or-later
// The fp16 loss scale per optimizer step on a logarithmic axis (QCustomPlot),
// from step_metrics.loss_scale, with a red cross at every step where a rank
// found inf/NaN in its gradients (EventKind::overflow) or the step was
// skipped (step_metrics.skipped). Without fp16 loss scaling the scale is 1.
#pragma once

#include <QWidget>
#include <cstdint>
#include <map>

#include "views/event_view.h"

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace shardscope::ui {

class LossScalePlot : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit LossScalePlot(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  int scalePointCount() const;
  // Steps marked as overflowed, with the scale that overflowed.
  const std::map<std::int64_t, double>& overflowSteps() const { return overflows_; }
  QCustomPlot* plot() const { return plot_; }
  QString title() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();
  void markOverflow(std::int64_t step, double scale);

  QCustomPlot* plot_;
  QCPGraph* scale_;
  QCPGraph* overflow_graph_;
  QCPTextElement* title_;
  std::map<std::int64_t, double> overflows_;
  bool dirty_ = false;
};

}  // namespace shardscope::ui
