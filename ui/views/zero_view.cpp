// SPDX-License-Identifier: GPL-3.0-or-later
// The ZeRO sharding view's model (what each rank holds, gathers and
// collectives counted from events) and the view's captions.
#include "views/zero_view.h"

#include <QEvent>

#include <algorithm>
#include <exception>

#include "model/model_config.h"
#include "model/parameter_layout.h"

namespace shardscope::ui {

void ZeroViewModel::reset(const RunConfig& config) {
  *this = ZeroViewModel();
  stage_ = std::clamp(config.zero_stage, 0, 3);
  dp_ = std::max(1, config.dp);
  ranks_ = std::max(1, config.world_size());
  try {
    layers_ = find_model_preset(config.model).layers;
  } catch (const std::exception&) {
    layers_ = 0;  // an unknown model: only the embeddings and the head
  }
}

bool ZeroViewModel::holdsChunk(int rank, int column, int chunk, State s) const {
  if (rank < 0 || rank >= ranks_ || column < 0 || column >= columns() || chunk < 0 || chunk >= chunks()) return false;
  const int me = rank % dp_;
  switch (stage_) {
    case 0: return true;
    case 1: return s != State::optimizer || column == me;  // ZeRO-1: column = flat shard, owner = dp rank
    case 2: return s == State::parameters || chunk == me;
    default: return chunk == me;
  }
}

bool ZeroViewModel::holds(int rank, int column, State s) const {
  for (int k = 0; k < chunks(); ++k)
    if (!holdsChunk(rank, column, k, s)) return false;
  return rank >= 0 && rank < ranks_ && column >= 0 && column < columns();
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
  if (rank < 0 || rank >= ranks_ || column < 0 || column >= columns()) return;
  auto& slot = activity_[{rank, column, static_cast<int>(s)}];
  slot = std::max(slot, ns);
}

void ZeroViewModel::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.step > last_step_) {
      last_step_ = e.step;
      step_start_ns_ = e.start_ns;
    }
    if (e.kind != EventKind::shard && e.kind != EventKind::comm_span) continue;
    latest_ns_ = std::max(latest_ns_, e.end_ns);
    const Key key{e.step, e.rank};
    if (e.kind == EventKind::shard) {
      const int unit = e.layer + 1;  // layer -1: embeddings, L: the head
      if (e.shard_action == ShardAction::gather) {
        ++gathers_[key];
        ++open_[e.rank][unit];
      } else {
        ++releases_[key];
        int& n = open_[e.rank][unit];
        n = std::max(0, n - 1);
      }
      touch(e.rank, unit, State::parameters, e.end_ns);
      continue;
    }
    const bool unit_op = stage_ >= 2 && e.bucket >= 0;
    if (e.op == CommOp::all_reduce && stage_ <= 1 && e.bucket >= 0) {  // DDP gradient buckets: every partition
      for (int r : {e.src, e.dst})
        for (int c = 0; c < columns(); ++c) touch(r, c, State::gradients, e.end_ns);
      continue;
    }
    if (e.op == CommOp::reduce_scatter && unit_op) {
      reduce_scatters_[key].insert({e.micro_batch, e.bucket});
      for (int r : {e.src, e.dst}) touch(r, e.bucket, State::gradients, e.end_ns);
    } else if (e.op == CommOp::all_gather && (unit_op || stage_ == 1)) {
      all_gathers_[key].insert({e.micro_batch, e.bucket});
      if (unit_op) {
        for (int r : {e.src, e.dst}) touch(r, e.bucket, State::parameters, e.end_ns);
      } else {  // ZeRO-1: the received shard (the ring moves shard `chunk`)
        const int shard = e.chunk >= 0 ? e.chunk % dp_ : -1;
        for (int r : {e.src, e.dst}) {
          if (shard >= 0) touch(r, shard, State::parameters, e.end_ns);
          else
            for (int c = 0; c < dp_; ++c) touch(r, c, State::parameters, e.end_ns);
        }
      }
    }
  }
}

ZeroView::ZeroView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(480, 260);
  setAutoFillBackground(false);
}

void ZeroView::reset(const RunConfig& config) {
  model_.reset(config);
  update();
}

void ZeroView::consume(const std::vector<Event>& events) { model_.consume(events); }

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
  const int nd = model_.dp();
  switch (model_.stage()) {
    case 0: return tr("ZeRO-0 (replicated): 4Ψ + 4Ψ + 8Ψ = 16Ψ per rank · Nd = %1").arg(nd);
    case 1: return tr("ZeRO-1: 4Ψ + 4Ψ + 8Ψ/Nd per rank · Nd = %1 (optimizer states sharded)").arg(nd);
    case 2: return tr("ZeRO-2: 4Ψ + 4Ψ/Nd + 8Ψ/Nd per rank · Nd = %1 (+ gradients sharded)").arg(nd);
    default: return tr("ZeRO-3: 4Ψ/Nd + 4Ψ/Nd + 8Ψ/Nd = 16Ψ/Nd per rank · Nd = %1 (+ parameters sharded)").arg(nd);
  }
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
