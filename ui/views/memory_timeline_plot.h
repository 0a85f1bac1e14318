// SPDX-License-Identifier: GPL-3.0-or-later
// Each rank's total ledger bytes (all categories) over the run's time
// (QCustomPlot), one line per rank, from memory_sample events (one per rank
// and step, on the run's clock). The time axis spans the whole run: the last
// sample's time scaled up to the run's steps, so the lines grow across it.
#pragma once

#include <QWidget>
#include <cstdint>
#include <vector>

#include "views/event_view.h"

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace shardscope::ui {

class MemoryTimelinePlot : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit MemoryTimelinePlot(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  int rankCount() const { return static_cast<int>(ranks_.size()); }
  int pointCount(int rank) const;
  // The last total bytes plotted for a rank (-1: none).
  std::int64_t lastTotalBytes(int rank) const;
  QCustomPlot* plot() const { return plot_; }
  QString title() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();

  QCustomPlot* plot_;
  std::vector<QCPGraph*> ranks_;
  std::vector<std::int64_t> last_total_;
  QCPTextElement* title_;
  bool dirty_ = false;
  bool virtual_clock_ = true;
  std::int64_t steps_ = 1;      // the run's
  std::int64_t last_step_ = 0;  // the newest step sampled, at last_s_ seconds
  double last_s_ = 0.0;
};

}  // namespace shardscope::ui
