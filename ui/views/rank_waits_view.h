// SPDX-License-Identifier: GPL-3.0-or-later
// The Waits view: who waited for whom. For one optimizer step (the last
// completed one unless the user picks another), a row per rank with its
// compute spans and, hatched red, the time it sat idle in a collective or a
// receive until another rank got there, labelled with that rank
// (EventKind::wait_span: the communicator passes the name of a late rank on
// round the ring, so a straggler is named by every rank it holds up, not just
// its neighbours). The header names the rank the others waited for most and
// how long, beside --slow-rank's factor when the run set one; a failing rank
// (an error event: its text says how fast every rank stopped) is marked on its row.
// Drawn only from events; the model (WaitsModel) is apart for the tests.
#pragma once

#include <QWidget>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "clock/wait_summary.h"
#include "events/event.h"
#include "views/event_view.h"

class QLabel;
class QSpinBox;

namespace shardscope::ui {

struct WaitsBox {
  int rank = 0;
  bool wait = false;  // a wait (culprit: whom for); else compute (kind)
  int culprit = -1;
  ComputeKind kind = ComputeKind::forward;
  CommOp op = CommOp::all_reduce;
  std::int64_t start_ns = 0, end_ns = 0;
};

struct WaitsFailure {
  int rank = 0;
  std::int64_t step = 0;
  std::int64_t at_ns = 0;
  std::string text;
};

class WaitsModel {
 public:
  void reset(const RunPlan& run);
  void consume(const std::vector<Event>& events);

  int ranks() const { return ranks_; }
  int slowRank() const { return slow_rank_; }
  double slowFactor() const { return slow_factor_; }
  std::int64_t lastCompletedStep() const { return last_completed_; }
  // The step's boxes (compute spans of whole stages and the optimizer, and waits), empty if none kept.
  const std::vector<WaitsBox>& boxes(std::int64_t step) const;
  // The step's waits summed per (waiter, waited for).
  RankWaits waits(std::int64_t step) const;
  const std::optional<WaitsFailure>& failure() const { return failure_; }

 private:
  static constexpr std::int64_t kKeptSteps = 16;
  int ranks_ = 1;
  int slow_rank_ = -1;
  double slow_factor_ = 1.0;
  std::map<std::int64_t, std::vector<WaitsBox>> steps_;
  std::map<std::int64_t, RankWaits> waits_;
  std::int64_t last_completed_ = 0;
  std::optional<WaitsFailure> failure_;
};

class WaitsCanvas;

class WaitsView : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit WaitsView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;

  const WaitsModel& model() const { return model_; }
  // The step drawn: the picked one, else the last completed one (0: none yet).
  std::int64_t shownStep() const;
  // The header's text for the shown step.
  QString headerText() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void retranslate();

  WaitsModel model_;
  WaitsCanvas* canvas_;
  QLabel* header_;
  QLabel* step_label_;
  QSpinBox* step_box_;
  bool dirty_ = false;
};

}  // namespace shardscope::ui
