// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline timeline's model and header: what each replica did in each
// step, and the summary of the shown one. The painting is in
// pipeline_timeline_paint.cpp.
#include "views/pipeline_timeline.h"

#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QStringList>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "clock/pipeline_bubble.h"
#include "config/run_choices.h"
#include "schedule_names.h"
#include "views/pipeline_timeline_canvas.h"

namespace shardscope::ui {

namespace {

// One decimal, as the CLI's closing lines print it.
QString percent(double fraction) {
  return QString::number(100.0 * fraction, 'f', 1);
}

Event stageSpan(const TimelineBox& b, std::int64_t step) {
  Event e;
  e.kind = EventKind::compute_span;
  e.rank = b.rank;
  e.stage = b.stage;
  e.step = step;
  e.micro_batch = b.micro_batch;
  e.compute = b.kind;
  e.layer = b.layer;
  e.start_ns = b.start_ns;
  e.end_ns = b.end_ns;
  return e;
}

Event bucketTransfer(const TimelineBucketSpan& s, std::int64_t step) {
  Event e;
  e.kind = EventKind::comm_span;
  e.op = CommOp::all_reduce;
  e.rank = e.src = s.rank;
  e.stage = s.stage;
  e.step = step;
  e.bucket = s.bucket;
  e.bytes = s.bytes;
  e.start_ns = s.start_ns;
  e.end_ns = s.end_ns;
  return e;
}

}  // namespace

PipelineTimelineView::PipelineTimelineView(QWidget* parent)
    : QWidget(parent),
      canvas_(new TimelineCanvas(this)),
      step_box_(new QSpinBox),
      replica_label_(new QLabel),
      replica_box_(new QSpinBox),
      tp_label_(new QLabel),
      tp_box_(new QSpinBox),
      bubble_label_(new QLabel),
      step_label_(new QLabel),
      replay_timer_(new QTimer(this)) {
  replay_timer_->setInterval(33);
  connect(replay_timer_, &QTimer::timeout, this, [this] {
    if (replayFraction() < 0) {  // done: the whole step stays drawn
      replay_timer_->stop();
      replay_step_ = 0;
    }
    canvas_->update();
  });
  setObjectName(QStringLiteral("pipeline_timeline"));
  step_box_->setObjectName(QStringLiteral("timeline_step"));
  step_box_->setRange(0, 0);
  replica_box_->setObjectName(QStringLiteral("timeline_replica"));
  replica_box_->setRange(0, 0);
  replica_label_->hide();  // until a run with dp > 1
  replica_box_->hide();
  tp_box_->setObjectName(QStringLiteral("timeline_tp_rank"));
  tp_box_->setRange(0, 0);
  tp_label_->hide();  // until a run with tp > 1
  tp_box_->hide();
  bubble_label_->setObjectName(QStringLiteral("bubble"));
  bubble_label_->setWordWrap(true);  // the accumulation line is long; the view must stay narrow (1280 px screens)
  auto* pickers = new QHBoxLayout;
  pickers->addWidget(step_label_);
  pickers->addWidget(step_box_);
  pickers->addSpacing(12);
  pickers->addWidget(replica_label_);
  pickers->addWidget(replica_box_);
  pickers->addWidget(tp_label_);
  pickers->addWidget(tp_box_);
  pickers->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(pickers);
  layout->addWidget(bubble_label_);  // the view's whole width: fewer wrapped lines at 1280 px
  pinned_label_ = new QLabel;
  pinned_label_->setObjectName(QStringLiteral("pinnedTimeline"));
  pinned_label_->setWordWrap(true);
  pinned_label_->hide();
  layout->addWidget(pinned_label_);  // a pinned run's copy goes under it (pin)
  layout->addWidget(canvas_, 1);
  for (QSpinBox* box : {step_box_, replica_box_, tp_box_})
    connect(box, &QSpinBox::valueChanged, this, [this] {
      canvas_->fit();
      updateHeader();
    });
  retranslate();
}

void PipelineTimelineView::setCompact() {
  compact_ = true;
  for (QWidget* w : std::initializer_list<QWidget*>{step_label_, step_box_, bubble_label_}) w->hide();
  canvas_->setMinimumSize(160, 60);  // no legend either (the Pipeline tab has it)
}

void PipelineTimelineView::copyShownStep(const PipelineTimelineView& from) {
  grid_ = from.grid_;
  micro_batches_ = from.micro_batches_;
  accumulation_ = from.accumulation_;
  virtual_stages_ = from.virtual_stages_;
  schedule_ = from.schedule_;
  schedule_file_ = from.schedule_file_;
  has_buckets_ = from.has_buckets_;
  has_chunks_ = from.has_chunks_;
  const std::int64_t step = from.shownStep();
  const auto it = from.steps_.find(step);
  if (it != from.steps_.end()) steps_[step] = it->second;
  replica_box_->setRange(0, grid_.dp() - 1);
  replica_box_->setValue(from.replica());
  tp_box_->setRange(0, grid_.tp() - 1);
  tp_box_->setValue(from.tensorRank());
  last_completed_ = last_seen_ = step;
}

void PipelineTimelineView::pin(const QString& label) {
  unpin();
  if (boxes(shownStep()).empty()) return;
  pinned_ = new PipelineTimelineView(this);
  pinned_->setObjectName(QStringLiteral("pinned_pipeline_timeline"));
  pinned_->setCompact();
  pinned_->copyShownStep(*this);
  auto* layout = static_cast<QVBoxLayout*>(this->layout());
  layout->insertWidget(layout->indexOf(pinned_label_) + 1, pinned_, 1);
  const std::int64_t step = pinned_->shownStep();
  const QString header = grid_.pp() > 1 ? pinned_->bubbleText(step) : pinned_->pipelineHeader(step);
  pinned_label_->setText(tr("Pinned: %1, step %2. %3").arg(label).arg(step).arg(header));
  pinned_label_->show();
}

void PipelineTimelineView::unpin() {
  delete pinned_;
  pinned_ = nullptr;
  pinned_label_->hide();
}

void PipelineTimelineView::retranslate() {
  step_label_->setText(tr("Step:"));
  step_box_->setSpecialValueText(tr("last completed"));
  step_box_->setToolTip(tr("The optimizer step to draw"));
  replica_label_->setText(tr("Replica:"));
  replica_box_->setToolTip(tr("The data-parallel replica (dp rank) to draw: its rank on every stage"));
  tp_label_->setText(tr("Tensor rank:"));
  tp_box_->setToolTip(
      tr("The tensor-parallel rank of the replica to draw: each tp rank runs the schedule on its "
         "slice of every layer"));
  bubble_label_->setToolTip(
      tr("The same numbers as shardscope-cli train's closing lines (summarize_schedule), for this step and replica.\n"
         "Bubble measured: the fill and drain of each pipeline flush, each stage's idle time up to p − 1 times the "
         "slowest stage's time per micro-batch, over p × window; the median over the step's flushes.\n"
         "Formula: the schedule's own: GPipe's and 1F1B's (p−1)/(m+p−1) for p equal stages and m micro-batches "
         "per flush, interleaved 1F1B's (p−1)/(v·m+p−1), ZB-H1's and ZB-H2's with the measured T_F, T_B, T_W.\n"
         "Stage imbalance: the rest of the idle time, faster stages waiting for the slowest.\n"
         "GPipe's with these stages' times: GPipe's idle time with each stage's measured time per micro-batch.\n"
         "Overlapped: the part of the ranks' bucket transfers that lies inside their backward."));
  updateHeader();
  canvas_->update();  // its rows, legend and hover text are drawn with tr() on paint
}

void PipelineTimelineView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

PipelineTimelineView::~PipelineTimelineView() = default;

void PipelineTimelineView::reset(const RunPlan& run) {
  const RunConfig& config = run.config();
  grid_ = run.sharding().grid();
  micro_batches_ = std::max(config.micro_batches, 1);
  accumulation_ = std::max(config.accum, 1);
  virtual_stages_ = std::max(config.virtual_stages, 1);
  schedule_ = pipeline_schedule_name(config.schedule);
  schedule_file_ = config.schedule_file;
  steps_.clear();
  unsettled_.clear();
  replay_timer_->stop();
  replay_step_ = 0;
  last_completed_ = last_seen_ = 0;
  has_buckets_ = has_chunks_ = false;
  step_box_->setRange(0, 0);
  replica_box_->setRange(0, grid_.dp() - 1);
  replica_label_->setVisible(grid_.dp() > 1);
  replica_box_->setVisible(grid_.dp() > 1);
  tp_box_->setRange(0, grid_.tp() - 1);
  tp_label_->setVisible(grid_.tp() > 1);
  tp_box_->setVisible(grid_.tp() > 1);
  canvas_->fit();
  dirty_ = true;
  refresh();
}

void PipelineTimelineView::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::step_metrics && e.step > last_completed_) {
      last_completed_ = e.step;
      dirty_ = true;  // "last completed" now draws this step
    }
    if (e.step <= 0 || e.rank < 0 || e.rank >= grid_.world_size()) continue;
    if (e.kind == EventKind::compute_span) consumeCompute(e);
    if (e.kind == EventKind::comm_span) consumeComm(e);
  }
}

TimelineReplicaStep& PipelineTimelineView::stepOf(std::int64_t step, int rank) {
  auto& replicas = steps_[step];
  unsettled_.insert(step);
  replicas.resize(static_cast<std::size_t>(grid_.dp() * grid_.tp()));
  dirty_ = true;
  return replicas[static_cast<std::size_t>(grid_.dp_rank_of(rank) * grid_.tp() + grid_.tp_rank_of(rank))];
}

void PipelineTimelineView::consumeCompute(const Event& e) {
  const bool whole = e.layer == -1 && (e.compute == ComputeKind::forward || e.compute == ComputeKind::backward ||
                                       e.compute == ComputeKind::weight_gradient);
  if (!whole && e.compute != ComputeKind::recompute) return;  // per-layer spans, the optimizer
  has_chunks_ = has_chunks_ || e.chunk > 0;
  stepOf(e.step, e.rank)
      .boxes.push_back(
          TimelineBox{e.stage, e.rank, e.micro_batch, e.compute, std::max(e.chunk, 0), e.layer, e.start_ns, e.end_ns});
  last_seen_ = std::max(last_seen_, e.step);
}

void PipelineTimelineView::consumeComm(const Event& e) {
  const int world = grid_.world_size();
  if (e.op == CommOp::send && e.src >= 0 && e.src < world && e.dst >= 0 && e.dst < world) {
    // A pipeline message goes between two stages of one replica (Grid::pipeline_group); an evaluation's
    // forward-only messages (micro-batch -1, tagged with the step it follows) are not the step's schedule.
    const int from = grid_.stage_of(e.src), to = grid_.stage_of(e.dst);
    if (from == to || grid_.dp_rank_of(e.src) != grid_.dp_rank_of(e.dst) ||
        grid_.tp_rank_of(e.src) != grid_.tp_rank_of(e.dst) || e.micro_batch < 0)
      return;
    stepOf(e.step, e.src)
        .transfers.push_back(TimelineTransfer{from, to, e.src, e.dst, e.micro_batch, std::max(e.chunk, 0), to > from,
                                              e.bytes, e.start_ns, e.end_ns});
  } else if (e.op == CommOp::all_reduce && e.bucket >= 0 && e.src == e.rank) {  // a DDP bucket's transfer it sent
    stepOf(e.step, e.rank)
        .buckets.push_back(TimelineBucketSpan{grid_.stage_of(e.rank), e.rank, e.bucket, e.bytes, e.start_ns, e.end_ns});
    has_buckets_ = true;
  } else if (is_tensor_parallel_layer_transfer(e) && e.src == e.rank) {
    stepOf(e.step, e.rank)
        .tensor.push_back(TimelineTensorSpan{grid_.stage_of(e.rank), e.rank, e.op, e.start_ns, e.end_ns});
  }
}

void PipelineTimelineView::settleDirections(TimelineReplicaStep& step) const {
  // A micro-batch's gradient leaves a chunk after the chunk's B of it, and its
  // activation before (that B waits for the gradient coming back): so a send
  // whose (chunk, micro-batch) has had its B on the sender is the gradient.
  // Grouped transfers (Megatron's) may leave a while after their compute.
  for (TimelineTransfer& t : step.transfers) {
    bool after_backward = false;
    for (const TimelineBox& b : step.boxes)
      after_backward =
          after_backward || (b.stage == t.src_stage && b.kind == ComputeKind::backward && b.chunk == t.chunk &&
                             b.micro_batch == t.micro_batch && b.end_ns <= t.start_ns + 1000);  // 1 µs of slack
    t.activation = !after_backward;
  }
}

void PipelineTimelineView::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  // One chunk per stage: the stages' order says where a send goes. Several: the box before it does.
  if (has_chunks_ || virtual_stages_ > 1 || !schedule_file_.empty())
    for (std::int64_t step : unsettled_)
      for (TimelineReplicaStep& replica : steps_[step]) settleDirections(replica);
  unsettled_.clear();
  step_box_->setMaximum(static_cast<int>(std::max(last_seen_, last_completed_)));
  updateHeader();
  canvas_->update();
}

int PipelineTimelineView::replica() const {
  return std::clamp(replica_box_->value(), 0, grid_.dp() - 1);
}

void PipelineTimelineView::setReplica(int dp_rank) {
  replica_box_->setValue(dp_rank);
}

int PipelineTimelineView::tensorRank() const {
  return std::clamp(tp_box_->value(), 0, grid_.tp() - 1);
}

void PipelineTimelineView::setTensorRank(int tp_rank) {
  tp_box_->setValue(tp_rank);
}

int PipelineTimelineView::shownRank(int stage) const {
  return grid_.with_coordinate(grid_.rank_at(stage, replica()), Axis::tp, tensorRank());
}

const TimelineReplicaStep& PipelineTimelineView::replicaStep(std::int64_t step) const {
  static const TimelineReplicaStep kNone;
  const auto it = steps_.find(step);
  const int index = replica() * grid_.tp() + tensorRank();
  if (it == steps_.end() || static_cast<int>(it->second.size()) <= index) return kNone;
  return it->second[static_cast<std::size_t>(index)];
}

ScheduleSummary PipelineTimelineView::summary(std::int64_t step) const {
  const TimelineReplicaStep& shown = replicaStep(step);
  std::vector<Event> events;
  events.reserve(shown.boxes.size() + shown.buckets.size());
  for (const auto& b : shown.boxes) events.push_back(stageSpan(b, step));
  for (const auto& s : shown.buckets) events.push_back(bucketTransfer(s, step));
  return summarize_schedule(events, grid_.dp() * grid_.tp(), grid_.pp(), micro_batches_);  // a (dp, tp) replica
}

double PipelineTimelineView::measured_bubble(std::int64_t step) const {
  const ScheduleSummary s = summary(step);
  return s.bubble ? s.bubble->measured : 0.0;
}

double PipelineTimelineView::formula_bubble() const {
  return gpipe_bubble_fraction(grid_.pp(), micro_batches_);
}

double PipelineTimelineView::one_flush_bubble() const {
  return gpipe_bubble_fraction(grid_.pp(), micro_batches_ * accumulation_);
}

QString PipelineTimelineView::scheduleName() const {
  if (!schedule_file_.empty())
    return tr("schedule file %1").arg(QFileInfo(QString::fromStdString(schedule_file_)).fileName());
  return scheduleDisplayName(QString::fromStdString(schedule_));
}

// Each schedule's own formula (clock/pipeline_bubble.h); GPipe's where a schedule has none of its own.
QString PipelineTimelineView::scheduleFormula(std::int64_t step) const {
  const int p = grid_.pp(), m = micro_batches_, v = virtual_stages_;
  if (schedule_file_.empty() && schedule_ == "interleaved-1f1b" && v > 1)
    return tr("formula (p−1)/(v·m+p−1) = (%1−1)/(%2·%3+%1−1) = %4%")
        .arg(p)
        .arg(v)
        .arg(m)
        .arg(percent(interleaved_bubble_fraction(p, m, v)));
  const ScheduleSummary s = summary(step);
  if (schedule_file_.empty() && (schedule_ == "zb-h1" || schedule_ == "zb-h2") && s.bubble && s.bubble->weight_ns > 0) {
    const PipelineBubble& b = *s.bubble;
    const bool h1 = schedule_ == "zb-h1";
    const double formula = h1 ? zb_h1_bubble_fraction(p, m, b.forward_ns, b.backward_ns, b.weight_ns)
                              : zb_h2_bubble_fraction(p, m, b.forward_ns, b.backward_ns, b.weight_ns);
    return (h1 ? tr("formula (p−1)(T_F+T_B−T_W) with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced "
                    "by the slowest stage %5%)")
               : tr("floor (p−1)·T_F with the measured T_F %1 ms, T_B %2 ms, T_W %3 ms = %4% (paced by the "
                    "slowest stage %5%)"))
        .arg(b.forward_ns / 1e6, 0, 'f', 3)
        .arg(b.backward_ns / 1e6, 0, 'f', 3)
        .arg(b.weight_ns / 1e6, 0, 'f', 3)
        .arg(percent(formula), percent(h1 ? zb_h1_bubble_paced(b) : zb_h2_bubble_paced(b)));
  }
  return tr("formula (p−1)/(m+p−1) = (%1−1)/(%2+%1−1) = %3%").arg(p).arg(m).arg(percent(formula_bubble()));
}

QString PipelineTimelineView::bubbleText(std::int64_t step) const {
  const ScheduleSummary s = summary(step);
  QString text = scheduleName() + QStringLiteral(": ") +
                 (s.bubble ? tr("bubble measured %1%").arg(percent(s.bubble->measured)) : tr("bubble measured –"));
  const QString formula = scheduleFormula(step);
  // Accumulation: k flushes of m micro-batches, each with its own fill and drain (see formula_bubble).
  const bool flushes = accumulation_ > 1 && grid_.pp() > 1;
  text += QStringLiteral(" · ") + (flushes ? tr("per flush %1").arg(formula) : formula);
  if (s.bubble)
    text += QStringLiteral(" · ") +
            tr("stage imbalance idles another %1% (idle in all %2%, GPipe's with these stages' times %3%)")
                .arg(percent(s.bubble->imbalance), percent(s.bubble->idle), percent(s.bubble->for_stages));
  if (!flushes) return text;
  const int all = accumulation_ * micro_batches_;
  return text + QStringLiteral(" · ") +
         tr("accumulation: k = %1 flushes of m = %2 micro-batches (F0–F%3), each fills and drains the pipeline; one "
            "flush of all %4 would idle %5%")
             .arg(QString::number(accumulation_), QString::number(micro_batches_), QString::number(all - 1),
                  QString::number(all), percent(one_flush_bubble()));
}

QString PipelineTimelineView::overlapText(std::int64_t step) const {
  const ScheduleSummary s = summary(step);
  if (!s.overlap) return {};
  return tr("communication overlapped with backward: %1% (%n bucket(s))", nullptr, s.overlap->buckets)
      .arg(percent(s.overlap->fraction()));
}

namespace {
std::int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void PipelineTimelineView::replayStep(std::int64_t step) {
  const auto& boxes = replicaStep(step).boxes;
  if (boxes.empty()) return;
  std::int64_t first = boxes.front().start_ns, last = boxes.front().end_ns;
  for (const TimelineBox& b : boxes) first = std::min(first, b.start_ns), last = std::max(last, b.end_ns);
  const double speed = speed_ > 0 ? std::min(speed_, 1.0) : 1.0;
  replay_ms_ = std::max(static_cast<double>(last - first) / 1e6, 2000.0) / speed;
  replay_step_ = step;
  replay_started_ns_ = steadyNs();
  canvas_->fit();
  updateHeader();
  replay_timer_->start();
  canvas_->update();
}

double PipelineTimelineView::replayFraction() const {
  if (replay_step_ <= 0) return -1.0;
  const double f = static_cast<double>(steadyNs() - replay_started_ns_) / 1e6 / replay_ms_;
  return f < 1.0 ? std::max(f, 0.0) : -1.0;
}

bool PipelineTimelineView::drawing() const {
  return replay_timer_->isActive();
}

std::pair<std::int64_t, std::int64_t> PipelineTimelineView::stepExtent(std::int64_t step) const {
  const auto& shown = boxes(step);
  std::int64_t first = shown.empty() ? 0 : shown.front().start_ns, last = first;
  for (const auto& b : shown) {
    first = std::min(first, b.start_ns);
    last = std::max(last, b.end_ns);
  }
  for (const auto& t : transfers(step)) last = std::max(last, t.end_ns);
  for (const auto& s : bucketSpans(step)) last = std::max(last, s.end_ns);  // the last bucket outlasts backward
  return {first, last};
}

void PipelineTimelineView::setTimeSpan(std::int64_t span_ns) {
  time_span_ns_ = std::max<std::int64_t>(0, span_ns);
  canvas_->update();
}

QRectF PipelineTimelineView::stepRect() const {
  return canvas_->stepRect();
}

QWidget* PipelineTimelineView::canvas() const {
  return canvas_;
}

std::int64_t PipelineTimelineView::shownStep() const {
  if (replay_step_ > 0) return replay_step_;
  if (step_box_->value() > 0) return step_box_->value();
  return last_completed_ > 0 && steps_.count(last_completed_) != 0 ? last_completed_ : last_seen_;
}

// The bubble of a pipeline, the overlap of DDP's buckets, one line each.
QString PipelineTimelineView::pipelineHeader(std::int64_t step) const {
  QStringList lines;
  if (grid_.pp() > 1) lines << bubbleText(step);
  const QString overlap = overlapText(step);
  if (!overlap.isEmpty()) lines << overlap;
  if (lines.isEmpty()) lines << tr("one stage: no pipeline bubble; no DDP bucket to overlap with backward");
  return lines.join(QLatin1Char('\n'));
}

void PipelineTimelineView::updateHeader() {
  const std::int64_t step = shownStep();
  bubble_label_->setText(step > 0 ? tr("Step %1: %2").arg(step).arg(pipelineHeader(step)) : pipelineHeader(step));
}

}  // namespace shardscope::ui
