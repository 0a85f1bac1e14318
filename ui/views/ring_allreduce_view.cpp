// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/ring_allreduce_view.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "plan/data_parallel_traffic.h"

namespace shardscope::ui {

namespace {

constexpr int kTickMs = 30;
constexpr std::size_t kKeptSteps = 200;

bool isRooted(CommOp op) {
  return op == CommOp::gather || op == CommOp::scatter || op == CommOp::broadcast;
}

}  // namespace

RingAllreduceView::RingAllreduceView(QWidget* parent)
    : QWidget(parent), stage_box_(new QComboBox), stage_label_(new QLabel), timer_(new QTimer(this)) {
  setMinimumSize(400, 300);  // fits beside the settings and the lessons on a 1280×720 screen
  auto* bar = new QHBoxLayout;
  bar->addWidget(stage_label_);
  bar->addWidget(stage_box_);
  bar->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 6);
  layout->addLayout(bar);
  layout->addStretch(1);
  connect(stage_box_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i >= 0 && i != stage_) setStage(i);
  });
  timer_->setInterval(kTickMs);
  connect(timer_, &QTimer::timeout, this, [this] { advance(1); });
  showStages();  // one stage until a run's reset
  clearModel();
  retranslate();
}

void RingAllreduceView::retranslate() {
  stage_label_->setText(tr("Stage:"));
  stage_box_->setToolTip(tr("Show the data-parallel ranks of this pipeline stage"));
  for (int s = 0; s < stage_box_->count(); ++s) stage_box_->setItemText(s, tr("stage %1").arg(s));
  update();  // the captions and labels are drawn with tr() on paint
}

void RingAllreduceView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

// The formula of each stage's data-parallel traffic (plan/data_parallel_traffic.h),
// from the run's sharding plan; none for a model whose kind cannot be read.
void RingAllreduceView::resetFormulas(const RunPlan& run) {
  const RunConfig& config = run.config();
  const ShardingPlan& plan = run.sharding();
  traffic_.clear();
  zero_ = 0;
  units_ = 0;
  try {
    const int extra = extra_embedding_gathers(run_model_config(config).kind);
    zero_ = plan.zero_stage();
    units_ = plan.unit_count();
    for (int s = 0; s < plan.grid().pp(); ++s)
      traffic_.push_back(data_parallel_traffic(plan, plan.stage(s),
                                               static_cast<std::int64_t>(config.accum) * config.micro_batches, extra));
  } catch (const std::exception&) {
    traffic_.clear();
  }
}

void RingAllreduceView::reset(const RunPlan& run) {
  const RunConfig& config = run.config();
  grid_ = run.sharding().grid();
  naive_ = config.dp_mode == DataParallelMode::naive;
  resetFormulas(run);
  stage_ = 0;
  last_step_ = 0;
  steps_.clear();
  nccl_.clear();
  showStages();
  clearModel();
}

// The stage picker lists the grid's stages, the first chosen.
void RingAllreduceView::showStages() {
  {
    const QSignalBlocker block(stage_box_);
    stage_box_->clear();
    for (int s = 0; s < grid_.pp(); ++s) stage_box_->addItem(tr("stage %1").arg(s));
    stage_box_->setCurrentIndex(0);
  }
  stage_box_->setEnabled(grid_.pp() > 1);
}

void RingAllreduceView::clearModel() {
  shown_.clear();
  queue_.clear();
  current_ = Group{};
  tick_ = 0;
  current_step_ = 0;
  anim_sent_.clear();
  anim_received_.clear();
  played_ = skipped_ = skipped_shown_ = skipped_pending_ = 0;
  played_by_step_.clear();
  timer_->stop();
  update();
}

void RingAllreduceView::setStage(int stage) {
  stage_ = std::clamp(stage, 0, grid_.pp() - 1);
  {
    const QSignalBlocker block(stage_box_);
    stage_box_->setCurrentIndex(stage_);
  }
  clearModel();
  for (const auto& [step, sd] : steps_)
    for (const RingTransfer& t : sd.transfers)
      if (grid_.stage_of(t.src) == stage_) shown_[step].push_back(t);
  if (!shown_.empty()) {  // replay the latest step
    for (const RingTransfer& t : shown_.rbegin()->second) enqueue(t);
    refresh();
  }
}

void RingAllreduceView::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.phase == RingPhase::none && e.dst < 0 &&
        e.src == grid_.rank_at(stage_, 0) && !naive_) {  // a whole NCCL all-reduce of the shown stage's first rank
      NcclCalls& c = nccl_[e.step];
      ++c.calls;
      c.bytes += e.bytes;
      c.gpu_ns += e.end_ns - e.start_ns;
      last_step_ = std::max(last_step_, e.step);
      while (nccl_.size() > kKeptSteps) nccl_.erase(nccl_.begin());
      continue;
    }
    if (e.kind != EventKind::comm_span || e.src < 0 || e.dst < 0) continue;
    if (e.purpose == CommPurpose::evaluation) continue;  // ZeRO-3's gathers to evaluate: not the step's
    if (e.purpose == CommPurpose::tensor_parallel) continue;  // within a tp group: the Tensor parallel view's
    // ring attention's key/value blocks and MoE's routed tokens: activations, not model states
    if (e.purpose == CommPurpose::context_parallel || e.purpose == CommPurpose::expert_parallel) continue;
    // DDP's bucket all-reduces, and the reduce-scatters and all-gathers (only ZeRO runs them).
    const bool ring = (e.op == CommOp::all_reduce && e.phase != RingPhase::none && e.bucket >= 0) ||
                      e.op == CommOp::reduce_scatter || e.op == CommOp::all_gather;
    if (naive_ ? !isRooted(e.op) : !ring) continue;
    // Comm spans carry no stage (the communicator leaves it 0): the grid says whose group it is.
    if (grid_.stage_of(e.src) != grid_.stage_of(e.dst)) continue;  // not within one stage's data-parallel group
    const RingTransfer t{e.src,   e.dst,       e.bucket, e.unit,  e.op,       e.purpose,
                         e.phase, e.ring_step, e.chunk,  e.bytes, e.start_ns, e.step};
    StepData& sd = steps_[e.step];
    sd.transfers.push_back(t);
    sd.sent[t.src] += t.bytes;
    sd.received[t.dst] += t.bytes;
    if (moves_model_states(t.purpose)) {
      sd.state_sent[t.src] += t.bytes;
      sd.state_received[t.dst] += t.bytes;
    }
    sd.sent_by_bucket[{t.src, t.bucket}] += t.bytes;
    last_step_ = std::max(last_step_, e.step);
    if (grid_.stage_of(t.src) == stage_) {
      shown_[e.step].push_back(t);
      enqueue(t);
    }
  }
  while (steps_.size() > kKeptSteps) steps_.erase(steps_.begin());
  while (shown_.size() > kKeptSteps) shown_.erase(shown_.begin());
  if (!everyTransferDrawn()) skipOlderSteps();
}

// Real time (or hidden): the step being drawn is finished, then the newest
// queued step; the steps between are skipped, their bytes still in the model.
void RingAllreduceView::skipOlderSteps() {
  if (queue_.empty()) return;
  const std::int64_t newest = queue_.back().transfers.front().step;
  std::deque<Group> kept;
  for (Group& g : queue_) {
    const std::int64_t step = g.transfers.front().step;
    if (step < newest && step != current_step_) {
      skipped_ += static_cast<std::int64_t>(g.transfers.size());
      skipped_pending_ += static_cast<std::int64_t>(g.transfers.size());
    } else {
      kept.push_back(std::move(g));
    }
  }
  queue_.swap(kept);
}

bool RingAllreduceView::drawing() const {
  return isVisible() && (!current_.transfers.empty() || !queue_.empty());
}

void RingAllreduceView::setPlaybackSpeed(double speed) {
  speed_ = speed;
  if (!everyTransferDrawn()) skipOlderSteps();
}

void RingAllreduceView::setTickMs(int ms) {
  timer_->setInterval(std::max(1, ms));
}

// Each ring step stays on screen 14 ticks (0.42 s) at ¼×, proportionally
// longer when slower and shorter when faster; real time keeps the ¼× pace.
int RingAllreduceView::ticksPerGroup() const {
  if (speed_ >= 1.0 || speed_ <= 0.0) return kTicksPerGroup;
  return std::clamp(static_cast<int>(std::lround(kTicksPerGroup * 0.25 / speed_)), 4, 4 * kTicksPerGroup);
}

// "One step, slowly": the shown stage's transfers of `step` drawn again, from the start of the step.
void RingAllreduceView::replayStep(std::int64_t step) {
  const auto it = shown_.find(step);
  if (it == shown_.end()) return;
  queue_.clear();
  current_ = Group{};
  tick_ = 0;
  current_step_ = -1;  // a step boundary: the circles count from zero
  skipped_pending_ = 0;
  for (const RingTransfer& t : it->second) enqueue(t);
  refresh();
}

std::int64_t RingAllreduceView::playedTransfers(std::int64_t step) const {
  const auto it = played_by_step_.find(step);
  return it == played_by_step_.end() ? 0 : it->second;
}

std::int64_t RingAllreduceView::stepsBehind() const {
  if (current_.transfers.empty() && queue_.empty()) return 0;
  return std::max<std::int64_t>(0, last_step_ - current_step_);
}

// The step on screen: the one being drawn, else the last one (drawn whole).
std::int64_t RingAllreduceView::shownStep() const {
  return current_.transfers.empty() && queue_.empty() && current_step_ != last_step_ ? last_step_ : current_step_;
}

std::int64_t RingAllreduceView::shownBytesSent(int rank) const {
  if (shownStep() != current_step_) return bytes_sent(rank, shownStep());
  const auto it = anim_sent_.find(rank);
  return it == anim_sent_.end() ? 0 : it->second;
}

void RingAllreduceView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refresh();
}

const std::vector<RingTransfer>& RingAllreduceView::transfers(std::int64_t step) const {
  static const std::vector<RingTransfer> none;
  const auto it = shown_.find(step);
  return it == shown_.end() ? none : it->second;
}

std::int64_t RingAllreduceView::bytes_sent(int rank, std::int64_t step, int bucket) const {
  const auto it = steps_.find(step);
  if (it == steps_.end()) return 0;
  if (bucket >= 0) {
    const auto b = it->second.sent_by_bucket.find({rank, bucket});
    return b == it->second.sent_by_bucket.end() ? 0 : b->second;
  }
  const auto r = it->second.sent.find(rank);
  return r == it->second.sent.end() ? 0 : r->second;
}

RingAllreduceView::NcclCalls RingAllreduceView::ncclCalls(std::int64_t step) const {
  const auto it = nccl_.find(step);
  return it == nccl_.end() ? NcclCalls{} : it->second;
}

namespace {
std::int64_t bytesOf(const std::map<int, std::int64_t>& by_rank, int rank) {
  const auto r = by_rank.find(rank);
  return r == by_rank.end() ? 0 : r->second;
}
}  // namespace

std::int64_t RingAllreduceView::bytes_received(int rank, std::int64_t step) const {
  const auto it = steps_.find(step);
  return it == steps_.end() ? 0 : bytesOf(it->second.received, rank);
}

std::int64_t RingAllreduceView::state_bytes_sent(int rank, std::int64_t step) const {
  const auto it = steps_.find(step);
  return it == steps_.end() ? 0 : bytesOf(it->second.state_sent, rank);
}

std::int64_t RingAllreduceView::state_bytes_received(int rank, std::int64_t step) const {
  const auto it = steps_.find(step);
  return it == steps_.end() ? 0 : bytesOf(it->second.state_received, rank);
}

double RingAllreduceView::formulaBytes() const {
  return stage_ < static_cast<int>(traffic_.size()) ? traffic_[static_cast<std::size_t>(stage_)].bytes : 0.0;
}

QString RingAllreduceView::formulaText() const {
  if (stage_ >= static_cast<int>(traffic_.size())) return {};
  return QString::fromStdString(traffic_[static_cast<std::size_t>(stage_)].formula);
}

QString RingAllreduceView::formulaValues() const {
  if (stage_ >= static_cast<int>(traffic_.size())) return {};
  return QString::fromStdString(traffic_[static_cast<std::size_t>(stage_)].values);
}

// Transfers that happened together form one group: the same step, op, bucket,
// phase and ring step. A late transfer joins its group if that is still waiting.
void RingAllreduceView::enqueue(const RingTransfer& t) {
  const auto same = [&](const Group& g) {
    const RingTransfer& f = g.transfers.front();
    return f.step == t.step && f.op == t.op && f.bucket == t.bucket && f.unit == t.unit && f.phase == t.phase &&
           f.ring_step == t.ring_step;
  };
  const std::size_t look = std::min<std::size_t>(queue_.size(), static_cast<std::size_t>(2 * grid_.dp()));
  for (std::size_t i = 0; i < look; ++i) {
    Group& g = queue_[queue_.size() - 1 - i];
    if (same(g)) {
      g.transfers.push_back(t);
      return;
    }
  }
  queue_.push_back(Group{{t}});
}

void RingAllreduceView::refresh() {
  if (current_.transfers.empty() && !queue_.empty()) startNextGroup();
  if (!current_.transfers.empty() && !timer_->isActive() && isVisible()) timer_->start();
  update();
}

void RingAllreduceView::setAnimationRunning(bool running) {
  if (running)
    timer_->start();
  else
    timer_->stop();
}

void RingAllreduceView::startNextGroup() {
  current_ = Group{};
  tick_ = 0;
  if (!everyTransferDrawn()) skipOlderSteps();  // at a step boundary, catch up with the run
  if (queue_.empty()) return;
  Group g = std::move(queue_.front());
  queue_.pop_front();
  const std::int64_t step = g.transfers.front().step;
  if (step != current_step_) {
    current_step_ = step;
    anim_sent_.clear();
    anim_received_.clear();
    skipped_shown_ = skipped_pending_;
    skipped_pending_ = 0;
  }
  for (const RingTransfer& t : g.transfers) {
    anim_sent_[t.src] += t.bytes;
    anim_received_[t.dst] += t.bytes;
  }
  const auto n = static_cast<std::int64_t>(g.transfers.size());
  played_ += n;
  played_by_step_[step] += n;
  while (played_by_step_.size() > kKeptSteps) played_by_step_.erase(played_by_step_.begin());
  current_ = std::move(g);
}

void RingAllreduceView::advance(int ticks) {
  for (int i = 0; i < ticks; ++i) {
    if (current_.transfers.empty()) {
      if (queue_.empty()) break;
      startNextGroup();
      continue;
    }
    if (++tick_ >= ticksPerGroup()) {
      current_ = Group{};
      tick_ = 0;
      if (!queue_.empty()) startNextGroup();
    }
  }
  if (current_.transfers.empty() && queue_.empty()) timer_->stop();
  update();
}

}  // namespace shardscope::ui
