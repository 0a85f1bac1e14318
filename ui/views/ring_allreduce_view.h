// SPDX-License-Identifier: GPL-3.0-or-later
// The ring view: the data-parallel ranks of one pipeline stage on a circle, fed
// only from comm_span events. Every ring collective's chunk transfers move along
// the ring edges: DDP's all-reduce (reduce-scatter, then all-gather, bucket by
// bucket), ZeRO-1's reduce-scatter of the gradients and all-gather of the
// updated flat shards, ZeRO-2's reduce-scatter per unit (embeddings, layer,
// head) and all-gather after the step, ZeRO-3's all-gather of each unit before
// its forward and backward. Under naive DataParallel the scatter, broadcast and
// gather between rank 0 and every peer show the star with rank 0 as the
// bottleneck. The footer sets the model-state bytes each rank sent this step
// beside the papers' formula (plan/data_parallel_traffic.h).
// The model (transfers and byte counters per step) is kept apart from the
// animation, which replays the consumed transfers in order at a readable pace.
// In slow motion (speed below 1, the view shown) it draws every transfer and
// the run waits for it (drawing()); in real time it draws each step it starts
// whole, says how many steps it is behind, and at the step boundary jumps to
// the newest step (saying how many transfers it skipped).
#pragma once

#include <QPointF>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "events/event.h"
#include "layout/grid.h"
#include "plan/data_parallel_traffic.h"
#include "views/event_view.h"

class QComboBox;
class QFontMetrics;
class QPainter;
class QLabel;
class QTimer;

namespace shardscope::ui {

struct RingTransfer {
  int src = -1;  // global ranks
  int dst = -1;
  int bucket = -1;
  int unit = -1;  // ZeRO-2/3: 0 embeddings, 1 + l layer l, L + 1 head
  CommOp op = CommOp::all_reduce;
  CommPurpose purpose = CommPurpose::other;  // other: naive's tokens and loss denominator
  RingPhase phase = RingPhase::none;
  int ring_step = -1;
  int chunk = -1;
  std::int64_t bytes = 0;
  std::int64_t start_ns = 0;
  std::int64_t step = 0;
};

class RingAllreduceView : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit RingAllreduceView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;
  bool drawing() const override;
  // 1: real time (catch up at step boundaries); below 1: every transfer drawn,
  // each ring step over 0.42 s × ¼ / speed.
  void setPlaybackSpeed(double speed) override;
  void replayStep(std::int64_t step) override;
  // Tests: the animation's timer interval (30 ms), to replay quicker.
  void setTickMs(int ms);

  // The model.
  int stage() const { return stage_; }
  void setStage(int stage);  // the stage whose dp ranks are shown; restarts the animation
  int ringSize() const { return grid_.dp(); }
  bool naive() const { return naive_; }
  int zeroStage() const { return zero_; }
  std::int64_t lastStep() const { return last_step_; }
  // The shown stage's transfers of a step, in the order they were consumed.
  const std::vector<RingTransfer>& transfers(std::int64_t step) const;
  // Bytes a global rank sent / received in a step (bucket -1: every bucket).
  std::int64_t bytes_sent(int rank, std::int64_t step, int bucket = -1) const;
  std::int64_t bytes_received(int rank, std::int64_t step) const;
  // Of those, the step's model states (purpose gradients or parameters).
  std::int64_t state_bytes_sent(int rank, std::int64_t step) const;
  std::int64_t state_bytes_received(int rank, std::int64_t step) const;
  // The formula's bytes per rank per step for the shown stage (naive: rank 0
  // sent + received), the formula ("2(N−1)/N · gΨ") and its values ("N = 4,
  // p = 4, g = 4, Ψ = 1234"); 0 and empty when the run's layout is not known.
  double formulaBytes() const;
  QString formulaText() const;
  QString formulaValues() const;
  // NCCL (one GPU per rank): each all-reduce is one span per rank (dst -1), its
  // ring steps inside NCCL's kernels. The calls of a step on the shown stage's
  // first rank, their bytes and GPU time; the caption says so instead of a ring.
  struct NcclCalls {
    int calls = 0;
    std::int64_t bytes = 0;
    std::int64_t gpu_ns = 0;
  };
  NcclCalls ncclCalls(std::int64_t step) const;

  // The animation: groups of transfers that happened together (one ring step of
  // one bucket, or one rooted collective), replayed in consumption order.
  std::size_t pendingGroups() const { return queue_.size(); }
  std::int64_t playedTransfers() const { return played_; }
  std::int64_t skippedTransfers() const { return skipped_; }
  // Transfers of a step drawn so far (each replay of the step counts again).
  std::int64_t playedTransfers(std::int64_t step) const;
  // Steps the run is ahead of the step being drawn (0 when caught up).
  std::int64_t stepsBehind() const;
  // What the rank circles say a rank sent: the step on screen up to the
  // replay cursor (the whole step once drawn). The totals line reads the same.
  std::int64_t shownBytesSent(int rank) const;
  std::int64_t shownStep() const;
  QString totalsCaption() const;
  // Advances the animation by `ticks` timer ticks (the timer calls it with 1).
  void advance(int ticks = 1);
  void setAnimationRunning(bool running);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  static constexpr int kTicksPerGroup = 14;  // timer ticks per replayed group: ~0.4 s, readable
  struct Group {
    std::vector<RingTransfer> transfers;
  };
  struct StepData {
    std::vector<RingTransfer> transfers;
    std::map<int, std::int64_t> sent, received;                  // by global rank
    std::map<int, std::int64_t> state_sent, state_received;      // the model states, by global rank
    std::map<std::pair<int, int>, std::int64_t> sent_by_bucket;  // (rank, bucket)
  };
  void clearModel();
  void resetFormulas(const RunPlan& run);
  void showStages();
  void retranslate();
  void enqueue(const RingTransfer& t);
  void startNextGroup();
  QString titleText() const;
  QString groupCaption() const;
  QString ringCaption(const RingTransfer& t) const;
  QString skippedCaption() const;
  int ticksPerGroup() const;
  bool everyTransferDrawn() const { return speed_ < 1.0 && isVisible(); }
  void skipOlderSteps();  // real time: keep the step being drawn and the newest
  // Under the ring: the legend row, then the totals and the skip note, each
  // wrapped to the view's width (a narrow view on a 1280 px screen).
  int footerHeight(const QFontMetrics& fm, int line) const;
  void paintFooter(QPainter& p, int top, int line) const;
  // The circle (ring_allreduce_paint.cpp): the ranks of the shown stage's
  // group at `at`, by dp rank, as circles of radius `node`.
  struct RingGeometry {
    QPointF center;
    double radius = 0, node = 22, label_w = 0;
    int line = 0;
    std::vector<QPointF> at;
  };
  RingGeometry ringGeometry(int top, int bottom, int line) const;
  QStringList rankLabelLines(int rank) const;  // "rank g sent ..." (and "received ..." for naive DP)
  void paintRingEdges(QPainter& p, const RingGeometry& g) const;
  void paintMovingChunks(QPainter& p, const RingGeometry& g) const;
  void paintRankNodes(QPainter& p, const RingGeometry& g) const;

  QComboBox* stage_box_;
  QLabel* stage_label_;
  QTimer* timer_;
  Grid grid_{1, 1};  // the run's dp x pp grid: who is in the shown stage's ring
  int stage_ = 0;
  bool naive_ = false;
  int zero_ = 0;                              // the ZeRO stage (0: DDP, or naive)
  int units_ = 0;                             // the model's units (L + 2): which one is the head
  std::vector<DataParallelTraffic> traffic_;  // the formula of each stage (plan/data_parallel_traffic.h)
  std::int64_t last_step_ = 0;
  std::map<std::int64_t, StepData> steps_;                   // every stage, keyed by step; see transfers()
  std::map<std::int64_t, NcclCalls> nccl_;                   // the shown stage's first rank, by step
  std::map<std::int64_t, std::vector<RingTransfer>> shown_;  // the shown stage's transfers
  // Animation state.
  std::deque<Group> queue_;
  Group current_;
  int tick_ = 0;  // ticks into the current group
  std::int64_t current_step_ = 0;
  std::map<int, std::int64_t> anim_sent_, anim_received_;  // this step, up to the cursor
  std::int64_t played_ = 0;
  std::int64_t skipped_ = 0;
  std::int64_t skipped_shown_ = 0;    // skipped to reach the step on screen
  std::int64_t skipped_pending_ = 0;  // skipped to reach the next step
  std::map<std::int64_t, std::int64_t> played_by_step_;
  double speed_ = 1.0;
};

}  // namespace shardscope::ui
