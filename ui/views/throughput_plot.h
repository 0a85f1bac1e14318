// SPDX-License-Identifier: GPL-3.0-or-later
// Tokens per second per optimizer step (QCustomPlot): the run's total from
// step_metrics.tokens_per_s, and one line per rank derived from that rank's
// own compute spans:
//
//   rank r's tokens/s at step s = tokens of r's data-parallel replica per step
//       (global batch x sequence length / dp)
//     / (end of r's optimizer span at step s - end of its optimizer span at s-1)
//
// (for the first step: since r's first compute span began). Every rank of a
// replica (each pipeline stage) sees all of the replica's tokens, so in a
// balanced run the lines overlap; a slow rank stands out below the others.
#pragma once

#include <QWidget>
#include <cstdint>
#include <vector>

#include "views/event_view.h"

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace shardscope::ui {

class ThroughputPlot : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit ThroughputPlot(QWidget* parent = nullptr);

  void reset(const RunConfig& config) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  int totalPointCount() const;
  int rankPointCount(int rank) const;
  // (step, tokens/s) of a rank's line.
  std::vector<std::pair<double, double>> rankPoints(int rank) const;
  double tokensPerReplicaStep() const { return tokens_per_replica_; }
  QCustomPlot* plot() const { return plot_; }
  QString title() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();

  QCustomPlot* plot_;
  QCPGraph* total_;
  std::vector<QCPGraph*> ranks_;
  QCPTextElement* title_;
  double tokens_per_replica_ = 0;
  std::vector<std::int64_t> first_start_ns_;         // per rank, -1: no span yet
  std::vector<std::int64_t> last_optimizer_end_ns_;  // per rank, -1: none yet
  bool dirty_ = false;
};

}  // namespace shardscope::ui
