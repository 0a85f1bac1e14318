// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline timeline: for one optimizer step (the last completed one unless
// the user picks another) and one replica, a (dp rank, tp rank) pair (0, 0 unless
// the user picks another), a row per pipeline stage with a box per forward,
// backward and recompute span of each micro-batch, coloured by micro-batch,
// the idle time between boxes shaded as bubble, and an arrow per pipeline
// send → receive between the stages' rows. Zero-bubble schedules' W boxes
// (weight gradients) are striped apart from B; a stage's later model chunks
// (interleaved schedules: chunk c of stage s is virtual stage c·p + s) are
// outlined, one line style per chunk, and the sends between chunks (the last
// stage to the first) dashed. The chunk is the compute span's and the send's
// `chunk` field (-1 or 0: the first), so new schedules draw with no change. Under DDP each row has a lane for
// the rank's communication stream with its buckets' all-reduce transfers, so
// their overlap with backward shows. The header gives the measured bubble beside
// the schedule's formula (named after it) and the overlapped fraction, both from summarize_schedule (the
// CLI's closing lines). Zoom with the mouse wheel, pan by dragging, double-click
// to fit, hover a box or a transfer for its details. Drawn only from events.
#pragma once

#include <QRectF>
#include <QWidget>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "clock/schedule_summary.h"
#include "events/event.h"
#include "layout/grid.h"
#include "views/event_view.h"

class QLabel;
class QSpinBox;
class QTimer;

namespace shardscope::ui {

// One box of the timeline, as the engine reported it (times since the run started).
struct TimelineBox {
  int stage = 0;
  int rank = 0;                             // global rank: the stage's rank in the shown replica
  int micro_batch = 0;                      // counts on across accumulation micro-steps
  ComputeKind kind = ComputeKind::forward;  // forward, backward (B), weight_gradient (W) or recompute
  int chunk = 0;                            // the stage's model chunk (virtual stages)
  int layer = -1;                           // -1 for a whole-stage forward/backward; a layer for a recompute
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// One pipeline message: a micro-batch's activation to the next stage, or its
// gradient back to the previous one. The engine reports it as one send event
// from the send call to the data being in the receiver's buffer (in-process and
// MPI: its arrival, which a receive waits for; NCCL: the send's completion).
struct TimelineTransfer {
  int src_stage = 0, dst_stage = 0;
  int src_rank = 0, dst_rank = 0;
  int micro_batch = 0;
  int chunk = 0;           // the sender's model chunk
  bool activation = true;  // an activation on to the next place in the model; else a gradient back
  std::int64_t bytes = 0;
  std::int64_t start_ns = 0;                              // the send starts (sender's clock)
  std::int64_t end_ns = 0;                                // the data has arrived (receiver's side)
  bool forward() const { return activation; }
  // Between two chunks: from the last stage back round to the first (an activation), or the other way (a gradient).
  bool betweenChunks() const { return activation ? dst_stage < src_stage : dst_stage > src_stage; }
};

// One ring transfer that `rank` sent for a DDP bucket's all-reduce, on its communication stream.
struct TimelineBucketSpan {
  int stage = 0, rank = 0, bucket = 0;
  std::int64_t bytes = 0;
  std::int64_t start_ns = 0, end_ns = 0;
};

// One ring transfer that `rank` sent for a tensor-parallel collective inside
// a layer (Megatron's f and g): drawn inside the F or B box it ran in.
struct TimelineTensorSpan {
  int stage = 0, rank = 0;
  CommOp op = CommOp::all_reduce;
  std::int64_t start_ns = 0, end_ns = 0;
};

// What one replica did in one step.
struct TimelineReplicaStep {
  std::vector<TimelineBox> boxes;
  std::vector<TimelineTransfer> transfers;
  std::vector<TimelineBucketSpan> buckets;
  std::vector<TimelineTensorSpan> tensor;
};

class TimelineCanvas;

class PipelineTimelineView : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit PipelineTimelineView(QWidget* parent = nullptr);
  ~PipelineTimelineView() override;

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;
  // "One step, slowly": the step drawn again from its start, a cursor sweeping
  // its time at the playback speed (at least 2 s of wall time at 1×, so a
  // 30 ms step can be followed), each box growing as the cursor passes it.
  bool drawing() const override;
  void setPlaybackSpeed(double speed) override { speed_ = speed; }
  void replayStep(std::int64_t step) override;
  // While replaying: how far the cursor has gone through the step, 0..1; -1 otherwise.
  double replayFraction() const;
  // "Pin this run": the shown step of this run stays drawn above the next
  // runs' (a compact copy, titled with `label` and its bubble) until unpinned.
  void pin(const QString& label);
  void unpin();
  const PipelineTimelineView* pinned() const { return pinned_; }

  // The shown replica's part of a step (empty if none).
  // Boxes: whole-stage forwards and backwards (layer == -1), plus the per-layer
  // recompute spans of checkpointed runs, which lie inside their backward box.
  const std::vector<TimelineBox>& boxes(std::int64_t step) const { return replicaStep(step).boxes; }
  const std::vector<TimelineTransfer>& transfers(std::int64_t step) const { return replicaStep(step).transfers; }
  const std::vector<TimelineBucketSpan>& bucketSpans(std::int64_t step) const { return replicaStep(step).buckets; }
  const std::vector<TimelineTensorSpan>& tensorSpans(std::int64_t step) const { return replicaStep(step).tensor; }
  // summarize_schedule over the shown replica's events of the step: the numbers in the header.
  ScheduleSummary summary(std::int64_t step) const;
  // The summary's measured bubble (the median over the step's pipeline flushes); 0 without one.
  double measured_bubble(std::int64_t step) const;
  // GPipe's (p - 1) / (m + p - 1) for the run's stages and the micro-batches of
  // one pipeline flush. With gradient accumulation k the engine runs the
  // schedule k times per optimizer step (Trainer::rank_step), each flush filling
  // and draining the pipeline, so m stays the micro-batches per flush even though
  // the step shows k·m of them (F0..F(k·m−1)).
  double formula_bubble() const;
  // The run's schedule as the papers name it ("1F1B", "ZB-H1", "Interleaved 1F1B",
  // "schedule file NAME") and its bubble formula evaluated for this run, as
  // "(p−1)/(v·m+p−1) = (4−1)/(2·8+4−1) = 15.8%" (zero-bubble schedules: with the step's measured box times).
  QString scheduleName() const;
  QString scheduleFormula(std::int64_t step) const;
  // The model chunks per stage the run's schedule uses (v; 1 for most).
  int virtualStages() const { return virtual_stages_; }
  // The same formula if all k·m micro-batches of the step ran in one flush.
  double one_flush_bubble() const;
  // "bubble measured 25.1% · formula (p−1)/(m+p−1) = (4−1)/(8+4−1) = 27.3% · stage imbalance
  // idles another 8.0% ..." (schedule_summary.h); with accumulation it also says how many
  // flushes of how many micro-batches ran.
  QString bubbleText(std::int64_t step) const;
  // "communication overlapped with backward: 41.5% ..."; empty without DDP buckets in the step.
  QString overlapText(std::int64_t step) const;
  // The step drawn now: the picked one, else the last completed one (0: none yet).
  std::int64_t shownStep() const;
  std::int64_t lastCompletedStep() const { return last_completed_; }
  // The data-parallel replica (dp rank) drawn; the selector shows while dp > 1.
  int replica() const;
  void setReplica(int dp_rank);
  // Its tensor-parallel rank (the selector shows while tp > 1): each tp rank
  // runs the whole schedule on its slice, so a replica is a (dp, tp) pair.
  int tensorRank() const;
  void setTensorRank(int tp_rank);
  // The global rank drawn on a stage's row: the shown replica's.
  int shownRank(int stage) const;
  int stages() const { return grid_.pp(); }
  // Only the drawing, for a small place (the schedule comparison): no step picker and no header.
  void setCompact();
  bool compact() const { return compact_; }
  // Whether the rows carry a communication lane (a DDP run whose buckets were seen).
  bool hasBucketLane() const { return has_buckets_; }
  // A step's first start and last end (ns since the run started; boxes, sends and buckets):
  // what the time axis spans. {0, 0} without boxes.
  std::pair<std::int64_t, std::int64_t> stepExtent(std::int64_t step) const;
  // One time axis for several timelines (the schedule comparison): the axis spans `span_ns`
  // when that is longer than the shown step, so a shorter step draws shorter; 0: the step's own.
  void setTimeSpan(std::int64_t span_ns);
  std::int64_t timeSpan() const { return time_span_ns_; }
  // Where the shown step is drawn on the canvas (its first start to its last end over the
  // stages' rows), in the canvas's coordinates; and the canvas, for a test to grab.
  QRectF stepRect() const;
  QWidget* canvas() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  friend class TimelineCanvas;
  const TimelineReplicaStep& replicaStep(std::int64_t step) const;
  TimelineReplicaStep& stepOf(std::int64_t step, int rank);
  void consumeCompute(const Event& e);
  void consumeComm(const Event& e);
  // With chunks a send's direction is not its stages' order: a gradient
  // follows its chunk's B of the micro-batch, an activation does not.
  void settleDirections(TimelineReplicaStep& step) const;
  void copyShownStep(const PipelineTimelineView& from);  // the run's layout and its shown step, for a pinned copy
  QString pipelineHeader(std::int64_t step) const;
  void updateHeader();
  void retranslate();

  TimelineCanvas* canvas_;
  QSpinBox* step_box_;
  QLabel* replica_label_;
  QSpinBox* replica_box_;
  QLabel* tp_label_;
  QSpinBox* tp_box_;
  QLabel* bubble_label_;
  QLabel* step_label_;
  Grid grid_{1, 1};        // the run's dp x pp grid: a row per stage, each row the shown replica's rank
  int micro_batches_ = 1;  // m: per pipeline flush
  int accumulation_ = 1;   // k: flushes per optimizer step
  int virtual_stages_ = 1;  // v
  std::string schedule_;    // the --schedule key, or "file" with schedule_file_
  std::string schedule_file_;
  std::map<std::int64_t, std::vector<TimelineReplicaStep>> steps_;  // step -> per dp rank × tp + tp rank
  std::set<std::int64_t> unsettled_;                                // steps with new events since the last refresh
  std::int64_t last_completed_ = 0;                                 // the newest step with a step_metrics event
  std::int64_t last_seen_ = 0;                                      // the newest step with any box
  bool has_buckets_ = false;
  bool has_chunks_ = false;
  bool compact_ = false;
  QTimer* replay_timer_;
  PipelineTimelineView* pinned_ = nullptr;
  QLabel* pinned_label_ = nullptr;
  std::int64_t replay_step_ = 0;        // the step replayed (0: none)
  std::int64_t replay_started_ns_ = 0;  // wall clock (steady) when it began
  double replay_ms_ = 0.0;              // its wall-clock length
  double speed_ = 1.0;                  // a box of a chunk > 0 was seen
  bool dirty_ = false;
  std::int64_t time_span_ns_ = 0;  // setTimeSpan
};

}  // namespace shardscope::ui
