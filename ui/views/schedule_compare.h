// SPDX-License-Identifier: GPL-3.0-or-later
// The "Schedules" tab (issue 30): one layout (the panel's model, stages and
// micro-batches, one data-parallel replica) under every pipeline schedule the
// run-config schema lists, each trained for kSteps steps on the virtual clock,
// one after the other in the background through a RunController of its own
// (the window's run and the UI go on). Side by side, each schedule's timeline
// of its last step (a PipelineTimelineView fed its events), that step's
// measured bubble beside its formula, and its peak activations per stage (the
// ledger's, from that step's memory samples). The last step, not the first:
// the first step also allocates every buffer and warms the caches, so its
// boxes are longer by amounts that differ between schedules (ZB-H1's first
// step could read longer than 1F1B's while its idle share is lower); by the
// third the buffers are reused and only the schedule differs. The last rather
// than the median of the steps, so the drawn step is named before the run and
// needs no choice among noisy lengths. A schedule the engine refuses for this layout shows
// the engine's reason in its place, so schedules that start to train later
// appear with no change here. The timelines share one time axis, set by the
// longest step: a shorter step draws shorter, in proportion to its length. A
// refusal shows in the interface's language (the engine's FieldError carries
// its Chinese; other reasons stay as the engine wrote them).
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "config/run_config.h"
#include "plan/run_plan.h"

class QGridLayout;
class QLabel;
class QPushButton;

namespace shardscope::ui {

class PipelineTimelineView;
class RunController;

class ScheduleCompareView : public QWidget {
  Q_OBJECT

 public:
  // Steps each schedule trains; the last is drawn (see above).
  static constexpr int kSteps = 3;

  explicit ScheduleCompareView(QWidget* parent = nullptr);
  ~ScheduleCompareView() override;

  // Where "Compare" takes the layout from (the window's panel).
  void setConfigSource(std::function<RunConfig()> source) { source_ = std::move(source); }
  // Starts the runs for `config`'s layout; a comparison under way is stopped first.
  void compare(const RunConfig& config);
  bool running() const { return next_ > 0 && next_ <= static_cast<int>(cells_.size()); }
  bool finished() const { return !cells_.empty() && next_ > static_cast<int>(cells_.size()); }

  // One schedule's place in the comparison.
  struct Cell {
    QString key;       // its --schedule key
    RunConfig config;  // what it ran
    QString refused;   // the engine's reason when it cannot run this layout
    QString refused_zh;  // the same in Chinese, when the engine gave one (FieldError)
    bool done = false;
    double measured = 0.0;  // the step's bubble, fill and drain (PipelineBubble::measured)
    double idle = 0.0;      // the stages' idle time in all (PipelineBubble::idle)
    QString formula;        // the schedule's formula, evaluated (PipelineTimelineView::scheduleFormula)
    std::vector<std::int64_t> peak_activations;  // [stage] the ledger's peak, the fullest rank of the stage
    std::int64_t step = 0;                       // the step drawn (its events' step index): the last, kSteps
    std::int64_t step_ns = 0;                    // the step drawn: its first start to its last end
    PipelineTimelineView* timeline = nullptr;
    QLabel* title = nullptr;
    QLabel* summary = nullptr;
  };
  const std::vector<Cell>& cells() const { return cells_; }
  // The refusal as shown now (the interface's language); empty for a schedule that ran.
  QString refusalText(const Cell& cell) const;
  // The shared time axis: the longest step measured so far (0 before the first).
  std::int64_t timeSpan() const;
  QPushButton* compareButton() const { return compare_; }

 Q_SIGNALS:
  void comparisonFinished();

 protected:
  void changeEvent(QEvent* event) override;

 private:
  // The layout under one schedule: kSteps steps on the virtual clock, one replica, nothing saved.
  static RunConfig scheduleRun(const RunConfig& base, const QString& key);
  void clearCells();
  void startNext();
  void finishCurrent(bool ok, const QString& message);
  // The drawn step's activation peak per stage (the fullest rank), from its memory samples.
  std::vector<std::int64_t> stagePeaks(std::int64_t step) const;
  void updateCell(Cell& cell) const;
  void shareTimeAxis();
  void retranslate();

  std::function<RunConfig()> source_;
  RunController* controller_;
  QPushButton* compare_;
  QLabel* intro_;
  QGridLayout* grid_;
  std::vector<Cell> cells_;
  RunPlanPtr plan_;  // the current run's
  // The current run's memory samples: (step, rank) -> the activations' peak the ledger reported.
  std::map<std::pair<std::int64_t, int>, std::int64_t> activation_peaks_;
  int next_ = 0;     // 1 + the cell running now; 0: none started; cells_.size() + 1: all done
};

}  // namespace shardscope::ui
