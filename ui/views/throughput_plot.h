// SPDX-License-Identifier: GPL-3.0-or-later
// Tokens per second per optimizer step (QCustomPlot), each line saying its clock:
//
//   modeled tokens/s on <device> = global batch x sequence length
//     / the step's duration on the virtual clock (the time between consecutive
//       step_metrics events, which the engine stamps with the latest rank's
//       virtual time at the step's end; for the first step: since 0, the
//       clock's start)
//
// where the device is the --gpu-profile's GPU (clock/gpu_time_model.h) or this
// machine's cores (each rank's CPU time); not drawn with the wall clock or on a
// GPU. (A step after an evaluation also holds the evaluation's compute, which
// the CLI's StepMetrics::virtual_step_s leaves out.)
//
//   measured host tokens/s (wall clock) = step_metrics.tokens_per_s, the step
//     on this machine's steady clock, every rank sharing its cores
//
// and one line per rank derived from that rank's own compute spans (on the
// run's clock):
//
//   rank r's tokens/s at step s = tokens of r's data-parallel replica per step
//       (global batch x sequence length / dp)
//     / (end of r's optimizer span at step s - end of its optimizer span at s-1)
//
// (for the first step: since r's first compute span began). Every rank of a
// replica (each pipeline stage) sees all of the replica's tokens, so in a
// balanced run the lines overlap; a slow rank stands out below the others.
//
// With a GPU profile the modeled lines run in millions and the host's in
// thousands: the host line gets the right-hand axis of its own, each axis
// labelled with what it measures. Otherwise one axis holds every line.
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

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  int totalPointCount() const;  // the measured host line
  // (step, tokens/s) of the modeled line (virtual clock) and of the measured host line (wall clock).
  std::vector<std::pair<double, double>> modeledPoints() const;
  std::vector<std::pair<double, double>> measuredPoints() const;
  QString modeledName() const;
  QString measuredName() const;
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
  QString leftAxisLabel() const;
  void addStepMetrics(const Event& e);
  void addComputeSpan(const Event& e);

  QCustomPlot* plot_;
  QCPGraph* total_;    // measured host tokens/s (wall clock)
  QCPGraph* modeled_;  // modeled tokens/s on the virtual clock's device
  std::vector<QCPGraph*> ranks_;
  QCPTextElement* title_;
  double tokens_per_replica_ = 0;
  double tokens_per_step_ = 0;
  bool virtual_clock_ = false;
  bool host_axis_apart_ = false;                     // the measured host line on the right axis (a GPU profile)
  QString gpu_profile_;                              // empty: this machine's cores
  std::int64_t last_metrics_ns_ = 0;                 // the previous step_metrics' virtual time (0: the clock's start)
  std::vector<std::int64_t> first_start_ns_;         // per rank, -1: no span yet
  std::vector<std::int64_t> last_optimizer_end_ns_;  // per rank, -1: none yet
  bool dirty_ = false;
};

}  // namespace shardscope::ui
