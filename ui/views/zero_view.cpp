// SPDX-License-Identifier: GPL-3.0-or-later
// The ZeRO sharding view's model (what each rank holds, gathers and
// collectives counted from events) and the view's captions.
#include "views/zero_view.h"

#include <QEvent>
#include <QTimer>
#include <algorithm>
#include <exception>

#include "byte_text.h"
#include "model/model_config.h"

namespace shardscope::ui {

void ZeroViewModel::reset(const RunPlan& run) {
  *this = ZeroViewModel();
  plan_.emplace(run.sharding());
  layers_ = run.sharding().unit_count() - 2;  // embeddings, the layers, the head
}

namespace {
ModelState modelState(ZeroViewModel::State s) {
  switch (s) {
    case ZeroViewModel::State::parameters: return ModelState::parameters;
    case ZeroViewModel::State::gradients: return ModelState::gradients;
    case ZeroViewModel::State::optimizer: break;
  }
  return ModelState::optimizer_states;
}

MemoryCategory categoryOf(ModelState s) {
  switch (s) {
    case ModelState::parameters: return MemoryCategory::parameters;
    case ModelState::gradients: return MemoryCategory::gradients;
    case ModelState::optimizer_states: break;
  }
  return MemoryCategory::optimizer_states;
}
}  // namespace

bool ZeroViewModel::holdsChunk(int rank, int column, int chunk, State s) const {
  if (!plan_ || rank < 0 || rank >= ranks() || column < 0 || column >= columns() || chunk < 0 || chunk >= chunks())
    return false;
  const ModelState state = modelState(s);
  if (plan_->flat_optimizer_shards()) {  // ZeRO-1: column = flat shard of the rank's stage, owner = dp rank
    if (state != ModelState::optimizer_states) return true;
    return plan_->updates(rank) && column == plan_->grid().dp_rank_of(rank);
  }
  return plan_->holds(rank, column, chunk, state);
}

bool ZeroViewModel::holds(int rank, int column, State s) const {
  for (int k = 0; k < chunks(); ++k)
    if (!holdsChunk(rank, column, k, s)) return false;
  return rank >= 0 && rank < ranks() && column >= 0 && column < columns();
}

std::int64_t ZeroViewModel::planBytes(int rank, ModelState s) const {
  if (!plan_ || rank < 0 || rank >= ranks()) return -1;
  return plan_->rank(rank).model_state_bytes[categoryOf(s)];
}

std::int64_t ZeroViewModel::ledgerBytes(int rank, ModelState s) const {
  const auto it = ledger_.find(rank);
  return it == ledger_.end() ? -1 : it->second[categoryOf(s)];
}

bool ZeroViewModel::gathered(int rank, int unit) const {
  const auto r = open_.find(rank);
  if (r == open_.end()) return false;
  const auto u = r->second.find(unit);
  return u != r->second.end() && u->second > 0;
}

int ZeroViewModel::gathered_units(int rank) const {
  const auto r = open_.find(rank);
  if (r == open_.end()) return 0;
  return static_cast<int>(std::count_if(r->second.begin(), r->second.end(), [](const auto& kv) { return kv.second > 0; }));
}

namespace {
template <typename M>
int countOf(const M& map, std::int64_t step, int rank) {
  const auto it = map.find({step, rank});
  return it == map.end() ? 0 : static_cast<int>(it->second);
}
template <typename M>
int sizeOf(const M& map, std::int64_t step, int rank) {
  const auto it = map.find({step, rank});
  return it == map.end() ? 0 : static_cast<int>(it->second.size());
}
}  // namespace

int ZeroViewModel::gathers(std::int64_t step, int rank) const { return countOf(gathers_, step, rank); }
int ZeroViewModel::releases(std::int64_t step, int rank) const { return countOf(releases_, step, rank); }
int ZeroViewModel::reduce_scatters(std::int64_t step, int rank) const { return sizeOf(reduce_scatters_, step, rank); }
int ZeroViewModel::all_gathers(std::int64_t step, int rank) const { return sizeOf(all_gathers_, step, rank); }

std::int64_t ZeroViewModel::activity_ns(int rank, int column, State s) const {
  const auto it = activity_.find({rank, column, static_cast<int>(s)});
  return it == activity_.end() ? -1 : it->second;
}

void ZeroViewModel::touch(int rank, int column, State s, std::int64_t ns) {
  if (rank < 0 || rank >= ranks() || column < 0 || column >= columns()) return;
  auto& slot = activity_[{rank, column, static_cast<int>(s)}];
  slot = std::max(slot, ns);
}

void ZeroViewModel::consume(const std::vector<Event>& events) {
  const bool flat = plan_ && plan_->flat_optimizer_shards();
  for (const Event& e : events) {
    if (e.step > last_step_) {
      last_step_ = e.step;
      step_start_ns_ = e.start_ns;
    }
    if (e.kind == EventKind::memory_sample) {
      ledger_[e.rank].bytes = e.memory;
      continue;
    }
    if (e.kind != EventKind::shard && e.kind != EventKind::comm_span) continue;
    latest_ns_ = std::max(latest_ns_, e.end_ns);
    const Key key{e.step, e.rank};
    if (e.kind == EventKind::shard) {
      if (e.shard_action == ShardAction::gather) {
        ++gathers_[key];
        ++open_[e.rank][e.unit];
      } else {
        ++releases_[key];
        int& n = open_[e.rank][e.unit];
        n = std::max(0, n - 1);
      }
      touch(e.rank, e.unit, State::parameters, e.end_ns);
      continue;
    }
    // A layer's (or the vocabulary-parallel loss's) tensor-parallel collectives move
    // activations, not model states: the Tensor parallel view draws them; so do ring attention's key/value blocks.
    if (e.purpose == CommPurpose::tensor_parallel || e.purpose == CommPurpose::context_parallel ||
        e.purpose == CommPurpose::expert_parallel)
      continue;
    if (e.op == CommOp::all_reduce && e.bucket >= 0) {  // DDP gradient buckets: every partition
      for (int r : {e.src, e.dst})
        for (int c = 0; c < columns(); ++c)
          if (holds(r, c, State::gradients)) touch(r, c, State::gradients, e.end_ns);
      continue;
    }
    if (e.op == CommOp::reduce_scatter && e.unit >= 0) {  // ZeRO-2/3: a unit's gradient
      reduce_scatters_[key].insert({e.micro_batch, e.unit});
      for (int r : {e.src, e.dst}) touch(r, e.unit, State::gradients, e.end_ns);
    } else if (e.op == CommOp::all_gather && e.unit >= 0) {  // ZeRO-2/3: a unit's parameters
      all_gathers_[key].insert({e.micro_batch, e.unit});
      for (int r : {e.src, e.dst}) touch(r, e.unit, State::parameters, e.end_ns);
    } else if (e.op == CommOp::all_gather && flat) {  // ZeRO-1: the ring moves flat shard `chunk`
      all_gathers_[key].insert({e.micro_batch, -1});
      const int shard = e.chunk >= 0 ? e.chunk % dp() : -1;
      for (int r : {e.src, e.dst}) {
        if (shard >= 0) touch(r, shard, State::parameters, e.end_ns);
        else
          for (int c = 0; c < dp(); ++c) touch(r, c, State::parameters, e.end_ns);
      }
    }
  }
}

void ZeroViewModel::restartStep(std::int64_t step, std::int64_t start_ns) {
  for (auto* counts : {&gathers_, &releases_})
    for (auto it = counts->begin(); it != counts->end();) it = it->first.first == step ? counts->erase(it) : ++it;
  for (auto* sets : {&reduce_scatters_, &all_gathers_})
    for (auto it = sets->begin(); it != sets->end();) it = it->first.first == step ? sets->erase(it) : ++it;
  open_.clear();
  activity_.clear();
  last_step_ = step;
  step_start_ns_ = latest_ns_ = start_ns;
}

ZeroView::ZeroView(QWidget* parent) : QWidget(parent), timer_(new QTimer(this)) {
  setMinimumSize(400, 240);
  setAutoFillBackground(false);
  timer_->setInterval(33);
  connect(timer_, &QTimer::timeout, this, &ZeroView::replayTick);
}

void ZeroView::reset(const RunPlan& run) {
  timer_->stop();
  live_.bringBack(model_);  // a replay cut short: its step is dropped with the rest
  replay_.forget();
  model_.reset(run);
  update();
}

void ZeroView::consume(const std::vector<Event>& events) {
  live_.forEvents(model_).consume(events);
  replay_.keep(events, [](const Event& e) { return e.kind == EventKind::shard || e.kind == EventKind::comm_span; });
}

bool ZeroView::drawing() const {
  return timer_->isActive();
}

void ZeroView::replayStep(std::int64_t step) {
  if (timer_->isActive() || !replay_.start(step, speed_)) return;  // one replay at a time
  live_.setAside(model_);                                          // the run's state, back when the replay ends
  model_.restartStep(step, replay_.fromNs());
  timer_->start();
}

// Feeds the replayed step's events up to the time the wall clock has reached.
void ZeroView::replayTick() {
  model_.consume(replay_.due());
  if (replay_.finished()) {
    timer_->stop();
    live_.bringBack(model_);
  }
  update();
}

void ZeroView::refresh() { update(); }

void ZeroView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) update();
  QWidget::changeEvent(event);
}

double ZeroView::flash(int rank, int column, ZeroViewModel::State s) const {
  const std::int64_t at = model_.activity_ns(rank, column, s);
  if (at < 0 || at < model_.step_start_ns()) return 0.0;
  // Recent activity: the last quarter of the step so far (at least 1 ms) fades out.
  const std::int64_t window = std::max<std::int64_t>(1'000'000, (model_.latest_ns() - model_.step_start_ns()) / 4);
  const double age = static_cast<double>(model_.latest_ns() - at) / static_cast<double>(window);
  return std::clamp(1.0 - age, 0.0, 1.0);
}

QString ZeroView::columnLabel(int column) const {
  if (model_.stage() == 1) return tr("shard %1").arg(column);
  if (column == 0) return tr("emb");
  if (column == model_.layers() + 1) return tr("head");
  return tr("L%1").arg(column - 1);
}

QString ZeroView::formulaText() const {
  const auto& plan = model_.plan();
  if (!plan) return tr("ZeRO: this run's model is unknown to the engine");
  const QString formula = QString::fromStdString(plan->formula_total());
  const int nd = plan->dp();
  switch (plan->zero_stage()) {
    case 0: return tr("ZeRO-0 (replicated): %1 per rank · Nd = %2").arg(formula).arg(nd);
    case 1: return tr("ZeRO-1: %1 per rank · Nd = %2 (optimizer states sharded)").arg(formula).arg(nd);
    case 2: return tr("ZeRO-2: %1 per rank · Nd = %2 (+ gradients sharded)").arg(formula).arg(nd);
    default: return tr("ZeRO-3: %1 per rank · Nd = %2 (+ parameters sharded)").arg(formula).arg(nd);
  }
}

QString ZeroView::bytesText(int rank) const {
  const bool measured = model_.ledgerBytes(rank, ModelState::parameters) >= 0;
  auto bytes = [&](ModelState s) {
    return byteText(measured ? model_.ledgerBytes(rank, s) : model_.planBytes(rank, s));
  };
  const QString held = tr("P %1 · G %2 · OS %3")
                           .arg(bytes(ModelState::parameters), bytes(ModelState::gradients),
                                bytes(ModelState::optimizer_states));
  return measured ? held : tr("%1 (plan)").arg(held);
}

QString ZeroView::countsText() const {
  const std::int64_t step = model_.lastStep();
  if (step == 0) return tr("Waiting for events: press Run.");
  int g = 0, rl = 0, rs = 0, ag = 0;
  for (int r = 0; r < model_.ranks(); ++r) {
    g += model_.gathers(step, r);
    rl += model_.releases(step, r);
    rs += model_.reduce_scatters(step, r);
    ag += model_.all_gathers(step, r);
  }
  return tr("Step %1, all ranks: %2 gathers, %3 releases, %4 reduce-scatters, %5 all-gathers")
      .arg(step).arg(g).arg(rl).arg(rs).arg(ag);
}

}  // namespace shardscope::ui
