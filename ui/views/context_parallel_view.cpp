// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/context_parallel_view.h"

#include <QComboBox>
#include <QLocale>
#include <algorithm>
#include <exception>

#include "config/run_config.h"
#include "model/model_config.h"

namespace shardscope::ui {

void ContextParallelModel::reset(const RunPlan& run) {
  *this = ContextParallelModel();
  const RunConfig& config = run.config();
  grid_ = Grid(config.layout);
  cp_ = grid_.size(Axis::cp);
  zigzag_ = config.cp_split != "contiguous";
  try {
    const ModelConfig model = run_model_config(config);
    layers_ = model.layers;
    causal_ = model.kind == ModelKind::gpt;  // BERT's attention sees both ways (padding only)
    for (int s = 0; s < grid_.pp(); ++s) {
      const StageLayers stage = pipeline_stage_layers(model, grid_.pp(), s);
      for (int l = stage.first_layer; l < stage.end_layer; ++l) stage_of_.push_back(s);
    }
    // One pass as drawn: no recompute's second forward ring (e = 4: fp32 blocks, as train prints them).
    formula_ =
        context_parallel_layer_traffic(cp_, config.micro_batch_size(), config.seq, model.channels / grid_.tp(), 4);
  } catch (const std::exception&) {  // a model the engine cannot read: nothing to draw
    layers_ = 0;
    stage_of_.clear();
  }
}

std::vector<int> ContextParallelModel::group(int layer) const {
  const int stage =
      layer >= 0 && layer < static_cast<int>(stage_of_.size()) ? stage_of_[static_cast<std::size_t>(layer)] : 0;
  return grid_.group(grid_.rank_at(stage, 0), Axis::cp);
}

int ContextParallelModel::chunkOwner(int chunk) const {
  if (zigzag_) return chunk < cp_ ? chunk : 2 * cp_ - 1 - chunk;
  return chunk / 2;
}

int ContextParallelModel::tileHalves(int query, int key) const {
  if (!causal_ || key < query) return 2;
  return key == query ? 1 : 0;
}

int ContextParallelModel::workHalves(int cp_rank) const {
  int halves = 0;
  for (int q = 0; q < 2 * cp_; ++q)
    if (chunkOwner(q) == cp_rank)
      for (int k = 0; k < 2 * cp_; ++k) halves += tileHalves(q, k);
  return halves;
}

int ContextParallelModel::filledHalves(const ContextParallelPass& pass, int cp_rank) const {
  if (pass.step == 0 || cp_rank < 0 || cp_rank >= static_cast<int>(pass.held.size())) return 0;
  int halves = 0;
  for (int q = 0; q < 2 * cp_; ++q)
    if (chunkOwner(q) == cp_rank)
      for (int k = 0; k < 2 * cp_; ++k)
        if (pass.held[static_cast<std::size_t>(cp_rank)][static_cast<std::size_t>(chunkOwner(k))])
          halves += tileHalves(q, k);
  return halves;
}

const ContextParallelPass& ContextParallelModel::latest(int layer, bool backward) const {
  static const ContextParallelPass none;
  const auto it = latest_.find({layer, backward});
  return it == latest_.end() ? none : it->second;
}

void ContextParallelModel::consume(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.kind != EventKind::comm_span || e.purpose != CommPurpose::context_parallel || e.op != CommOp::send) continue;
    ++transfers_;
    // A layer's ring of a training micro-batch (an evaluation's forwards have none), from the shown group.
    if (cp_ < 2 || e.layer < 0 || e.layer >= layers_ || e.micro_batch < 0 || e.chunk < 0 || e.chunk >= cp_) continue;
    const std::vector<int> shown = group(e.layer);
    const auto at = std::find(shown.begin(), shown.end(), e.src);
    if (at == shown.end()) continue;
    add(e, e.layer, static_cast<int>(at - shown.begin()));
  }
}

ContextParallelPass ContextParallelModel::fresh(const Event& e) const {
  ContextParallelPass p;
  p.step = e.step;
  p.micro_batch = e.micro_batch;
  p.backward = e.compute == ComputeKind::backward;
  p.held.assign(static_cast<std::size_t>(cp_), std::vector<bool>(static_cast<std::size_t>(cp_), false));
  for (int r = 0; r < cp_; ++r) p.held[static_cast<std::size_t>(r)][static_cast<std::size_t>(r)] = true;
  p.step_bytes.assign(static_cast<std::size_t>(cp_), 0);
  p.block_sends.assign(static_cast<std::size_t>(cp_), {});
  p.gradient_sends.assign(static_cast<std::size_t>(cp_), {});
  p.rank_bytes.assign(static_cast<std::size_t>(cp_), 0);
  return p;
}

void ContextParallelModel::add(const Event& e, int layer, int cp_rank) {
  const bool backward = e.compute == ComputeKind::backward, gradients = e.phase == RingPhase::reduce_scatter;
  const int to = (cp_rank + 1) % cp_;  // the ring's next rank receives it
  ContextParallelPass& p = latest_[{layer, backward}];
  // A late send of an earlier micro-batch (its ranks still finishing while others began the next) is passed over.
  if (std::pair{e.step, e.micro_batch} < std::pair{p.step, p.micro_batch}) return;
  // A new micro-batch, or a recompute's forward ring again (a block arrives twice).
  const bool again =
      !gradients && p.step != 0 && p.held[static_cast<std::size_t>(to)][static_cast<std::size_t>(e.chunk)];
  if (p.step != e.step || p.micro_batch != e.micro_batch || again) p = fresh(e);
  if (!gradients) p.held[static_cast<std::size_t>(to)][static_cast<std::size_t>(e.chunk)] = true;
  p.rank_bytes[static_cast<std::size_t>(cp_rank)] += e.bytes;
  if (e.ring_step >= 0 && e.ring_step < cp_) p.step_bytes[static_cast<std::size_t>(e.ring_step)] += e.bytes;
  if (e.ring_step < 0 || e.ring_step >= cp_) return;
  (gradients ? p.gradient_sends : p.block_sends)[static_cast<std::size_t>(e.ring_step)].emplace_back(cp_rank, e.chunk);
  // The ranks reach a ring step at different times: the furthest one is drawn, the gradients' once they travel.
  if (gradients && !p.latest_gradients) p.latest_ring_step = -1;
  p.latest_gradients = p.latest_gradients || gradients;
  if (gradients == p.latest_gradients) p.latest_ring_step = std::max(p.latest_ring_step, e.ring_step);
  ++p.sends;
}

const std::vector<std::pair<int, int>>& ContextParallelPass::latestSends() const {
  static const std::vector<std::pair<int, int>> none;
  if (latest_ring_step < 0) return none;
  return (latest_gradients ? gradient_sends : block_sends)[static_cast<std::size_t>(latest_ring_step)];
}

ContextParallelView::ContextParallelView(QWidget* parent)
    : LayerView(QStringLiteral("contextParallelLayer"), parent), pass_box_(new QComboBox) {
  pass_box_->setObjectName(QStringLiteral("contextParallelPass"));
  pass_box_->addItems({QString(), QString()});
  addToBar(pass_box_);
  connect(pass_box_, &QComboBox::currentIndexChanged, this, [this](int i) { setBackward(i == 1); });
  retranslate();
}

void ContextParallelView::retranslate() {
  setLayerTexts(tr("Layer:"), tr("The transformer layer whose ring attention is shown"));
  pass_box_->setItemText(0, tr("Forward: key/value blocks"));
  pass_box_->setItemText(1, tr("Backward: blocks and their gradients"));
  update();  // the rest is drawn with tr() on paint
}

void ContextParallelView::reset(const RunPlan& run) {
  forgetReplay();
  model_.reset(run);
  setLayerCount(model_.layers());
  update();
}

void ContextParallelView::consume(const std::vector<Event>& events) {
  live_.forEvents(model_).consume(events);
  keepForReplay(events);
}

bool ContextParallelView::keepsForReplay(const Event& e) const {
  return e.kind == EventKind::comm_span && e.purpose == CommPurpose::context_parallel && e.op == CommOp::send;
}

void ContextParallelView::startReplay(std::int64_t) {
  live_.setAside(model_);
  model_.clearPasses();
}

void ContextParallelView::setBackward(bool backward) {
  backward_ = backward;
  if (pass_box_->currentIndex() != (backward ? 1 : 0)) pass_box_->setCurrentIndex(backward ? 1 : 0);
  update();
}

QString ContextParallelView::placeholderText() const {
  if (model_.layers() == 0)
    return tr("Run a model with Context-parallel ranks of 2 or more to see ring attention's blocks travel.");
  if (model_.cp() < 2)
    return tr(
        "This run has one context-parallel rank, so every rank attends over its whole sequences. With "
        "Context-parallel ranks of 2 or more (train --cp 2), each rank keeps seq/cp tokens of every "
        "sequence and this view draws the key/value blocks travelling the ring, each rank's attention "
        "tiles filling in as the blocks arrive, and the causal mask's work per rank under the zig-zag or "
        "contiguous split.");
  return {};
}

QString ContextParallelView::workText() const {
  QStringList work;
  for (int r = 0; r < model_.cp(); ++r)
    work << tr("rank %1: %2").arg(model_.group(layer())[static_cast<std::size_t>(r)]).arg(model_.workHalves(r) / 2.0);
  const QString rule = !model_.causal() ? tr("no causal mask: every tile is whole")
                       : model_.zigzag()
                           ? tr("zig-zag: chunks r and 2cp−1−r give every rank 2cp = %1").arg(2 * model_.cp())
                           : tr("contiguous: rank r's chunks 2r and 2r+1 give it 4r+2");
  return tr("Work per rank (tiles kept by the mask, a diagonal tile counts \u00bd): %1 (%2)")
      .arg(work.join(QStringLiteral(", ")), rule);
}

QString ContextParallelView::ringBytesText() const {
  const ContextParallelPass& p = model_.latest(layer(), backward_);
  if (p.step == 0) return tr("Ring: no blocks of layer %1 in this pass yet.").arg(layer());
  QStringList steps;
  const QLocale locale;
  for (std::size_t s = 0; s < p.step_bytes.size(); ++s)
    if (p.step_bytes[s] > 0) steps << tr("step %1: %2 B").arg(s).arg(locale.toString(p.step_bytes[s]));
  return tr("Bytes on the ring per ring step (step %1, micro-batch %2): %3")
      .arg(p.step)
      .arg(p.micro_batch)
      .arg(steps.join(QStringLiteral(", ")));
}

QString ContextParallelView::formulaText() const {
  const ContextParallelPass& p = model_.latest(layer(), backward_);
  const ContextParallelTraffic& f = model_.formula();
  const QLocale locale;
  QStringList sent;
  for (std::size_t r = 0; r < p.rank_bytes.size(); ++r) sent << locale.toString(p.rank_bytes[r]);
  const QString formula = backward_ ? QStringLiteral("(2cp\u22121) \u00b7 2\u00b7b\u00b7(s/cp)\u00b7h\u00b7e")
                                    : QStringLiteral("(cp\u22121) \u00b7 2\u00b7b\u00b7(s/cp)\u00b7h\u00b7e");
  return tr("Sent per rank in this pass: %1 B; formula %2 = %3 B with %4")
      .arg(sent.isEmpty() ? QStringLiteral("0") : sent.join(QStringLiteral(" / ")), formula,
           locale.toString(backward_ ? f.backward_bytes : f.forward_bytes), QString::fromStdString(f.values));
}

}  // namespace shardscope::ui
