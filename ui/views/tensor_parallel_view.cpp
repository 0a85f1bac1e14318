// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/tensor_parallel_view.h"

#include <QLocale>
#include <algorithm>
#include <exception>

#include "clock/schedule_summary.h"
#include "config/run_config.h"
#include "model/model_config.h"

namespace shardscope::ui {

namespace {

constexpr std::int64_t kKeptSteps = 3;  // micro-batch sums kept: the latest complete one is shown

// A collective's first transfer on a rank: the first ring step of its first
// phase (an all-reduce's reduce-scatter half; an all-gather or a
// reduce-scatter has one phase).
bool startsCollective(const Event& e) {
  return e.ring_step == 0 && (e.op != CommOp::all_reduce || e.phase != RingPhase::all_gather);
}

// The place of the k-th collective of a pass. Tensor parallelism runs its 2
// all-reduces at g (after the row-parallel layers) in forward and at f
// (before the column-parallel ones) in backward, which meets the MLP first;
// sequence parallelism runs 4 collectives a pass, one at every place, in
// forward order and then in reverse.
TensorParallelPlace placeOfIndex(int index, int per_pass, TensorParallelPass pass) {
  using P = TensorParallelPlace;
  if (per_pass == 4)
    return static_cast<P>(pass == TensorParallelPass::backward ? kTensorParallelPlaces - 1 - index : index);
  if (pass == TensorParallelPass::backward) return index == 0 ? P::mlp_in : P::attention_in;
  return index == 0 ? P::attention_out : P::mlp_out;
}

}  // namespace

void TensorParallelModel::reset(const RunPlan& run) {
  *this = TensorParallelModel();
  const RunConfig& config = run.config();
  grid_ = Grid(config.layout);
  passes_ = config.checkpoint ? 3 : 2;
  try {
    const ModelConfig model = run_model_config(config);
    layers_ = model.layers;
    channels_ = model.channels;
    heads_ = model.heads;
    for (int s = 0; s < grid_.pp(); ++s) {
      const StageLayers stage = pipeline_stage_layers(model, grid_.pp(), s);
      for (int l = stage.first_layer; l < stage.end_layer; ++l) stage_of_.push_back(s);
    }
    // e = 4: the layers' activations travel in fp32 (as train's summary prints it).
    formula_ = tensor_parallel_layer_traffic(grid_.tp(), config.micro_batch_size(), config.seq, channels_, 4,
                                             config.checkpoint);
  } catch (const std::exception&) {  // a model the engine cannot read: nothing to draw
    layers_ = 0;
    stage_of_.clear();
  }
}

int TensorParallelModel::stageOf(int layer) const {
  return layer >= 0 && layer < static_cast<int>(stage_of_.size()) ? stage_of_[static_cast<std::size_t>(layer)] : 0;
}

std::vector<int> TensorParallelModel::group(int layer) const {
  return grid_.group(grid_.rank_at(stageOf(layer), 0), Axis::tp);
}

void TensorParallelModel::consume(const std::vector<Event>& events) {
  for (const Event& e : events)
    if (is_tensor_parallel_layer_transfer(e) && e.unit - 1 < layers_) add(e);
}

TensorParallelCollective TensorParallelModel::placeOf(const Event& e, KeyData& key) const {
  if (key.per_pass == 0) key.per_pass = e.op == CommOp::all_reduce ? 2 : 4;
  const int index = key.collectives % key.per_pass;
  int pass = key.collectives / key.per_pass;
  if (pass == passes_ - 1) pass = static_cast<int>(TensorParallelPass::backward);  // the last pass is backward
  TensorParallelCollective c;
  c.op = e.op;
  c.pass = static_cast<TensorParallelPass>(std::min(pass, 2));
  c.place = placeOfIndex(index, key.per_pass, c.pass);
  c.step = e.step;
  c.micro_batch = e.micro_batch;
  c.layer = e.unit - 1;  // the event's unit is 1 + l (parallel/tensor_parallel.cpp)
  c.rank = e.src;
  return c;
}

void TensorParallelModel::add(const Event& e) {
  const int layer = e.unit - 1;
  ++transfers_;
  ++layer_transfers_[layer];
  if (!keys_.empty() && e.step > std::get<0>(keys_.rbegin()->first))
    keys_.erase(keys_.begin(), keys_.lower_bound(Key{e.step - kKeptSteps + 1, -1, -1, -1}));
  KeyData& key = keys_[Key{e.step, e.src, layer, e.micro_batch}];
  key.bytes += e.bytes;
  ++key.transfers;
  const std::vector<int> shown = group(layer);
  const bool in_group = std::find(shown.begin(), shown.end(), e.src) != shown.end();
  if (startsCollective(e)) {
    const TensorParallelCollective c = placeOf(e, key);
    ++key.collectives;
    if (in_group) {
      ++layer_collectives_[layer];
      auto& places = latest_[layer];
      places[static_cast<std::size_t>(c.place)] = c;
      places[static_cast<std::size_t>(c.place)].seen = ++seen_;
    }
  }
  // Every pass moves 4(t−1) ring transfers from each rank: 2 all-reduces of
  // 2(t−1), or 4 all-gathers / reduce-scatters of t−1.
  if (!shown.empty() && e.src == shown.front() && key.transfers == passes_ * 4 * (grid_.tp() - 1))
    complete_[layer] = {e.step, e.micro_batch};
}

std::int64_t TensorParallelModel::transfers(int layer) const {
  const auto it = layer_transfers_.find(layer);
  return it == layer_transfers_.end() ? 0 : it->second;
}

std::int64_t TensorParallelModel::collectives(int layer) const {
  const auto it = layer_collectives_.find(layer);
  return it == layer_collectives_.end() ? 0 : it->second;
}

const TensorParallelCollective& TensorParallelModel::latest(int layer, TensorParallelPlace place) const {
  static const TensorParallelCollective none;
  const auto it = latest_.find(layer);
  return it == latest_.end() ? none : it->second[static_cast<std::size_t>(place)];
}

const TensorParallelCollective* TensorParallelModel::latest(int layer) const {
  const auto it = latest_.find(layer);
  if (it == latest_.end()) return nullptr;
  const auto newest = std::max_element(it->second.begin(), it->second.end(),
                                       [](const auto& a, const auto& b) { return a.seen < b.seen; });
  return newest->seen > 0 ? &*newest : nullptr;
}

std::int64_t TensorParallelModel::bytesSent(int rank, int layer, std::int64_t step, int micro_batch) const {
  const auto it = keys_.find(Key{step, rank, layer, micro_batch});
  return it == keys_.end() ? 0 : it->second.bytes;
}

std::pair<std::int64_t, int> TensorParallelModel::completeMicroBatch(int layer) const {
  const auto it = complete_.find(layer);
  return it == complete_.end() ? std::pair<std::int64_t, int>{0, -1} : it->second;
}

void TensorParallelModel::restartStep(std::int64_t step) {
  const auto first = keys_.lower_bound(Key{step, -1, -1, -1});
  for (auto it = first; it != keys_.end(); ++it) {
    const auto& [key_step, rank, layer, micro_batch] = it->first;
    transfers_ -= it->second.transfers;
    layer_transfers_[layer] -= it->second.transfers;
    const std::vector<int> shown = group(layer);
    if (std::find(shown.begin(), shown.end(), rank) != shown.end()) layer_collectives_[layer] -= it->second.collectives;
  }
  keys_.erase(first, keys_.end());
  latest_.clear();
  // The latest complete micro-batch left: keys run by (step, rank, layer,
  // micro-batch), so a rank's layer's last complete key is its latest.
  complete_.clear();
  for (const auto& [key, data] : keys_) {
    const auto& [key_step, rank, layer, micro_batch] = key;
    const std::vector<int> shown = group(layer);
    if (!shown.empty() && rank == shown.front() && data.transfers == passes_ * 4 * (grid_.tp() - 1))
      complete_[layer] = {key_step, micro_batch};
  }
}

TensorParallelView::TensorParallelView(QWidget* parent) : LayerView(QStringLiteral("tensorParallelLayer"), parent) {
  retranslate();
}

void TensorParallelView::retranslate() {
  setLayerTexts(tr("Layer:"), tr("The transformer layer whose matrices and collectives are shown"));
  update();  // the rest is drawn with tr() on paint
}

void TensorParallelView::reset(const RunPlan& run) {
  forgetReplay();
  model_.reset(run);
  setLayerCount(model_.layers());
  update();
}

void TensorParallelView::consume(const std::vector<Event>& events) {
  live_.forEvents(model_).consume(events);
  keepForReplay(events);
}

bool TensorParallelView::keepsForReplay(const Event& e) const {
  return is_tensor_parallel_layer_transfer(e);
}

void TensorParallelView::startReplay(std::int64_t step) {
  live_.setAside(model_);
  model_.restartStep(step);
}

QString TensorParallelView::placeholderText() const {
  if (model_.layers() == 0)
    return tr("Run a model with Tensor-parallel ranks of 2 or more to see one layer's matrices split over the ranks.");
  if (model_.tp() < 2)
    return tr("This run has one tensor-parallel rank, so every layer's matrices stay whole. With Tensor-parallel "
              "ranks t of 2 or more (train --tp t), this view draws one layer's weight matrices split over the t "
              "ranks (QKV and the MLP's first linear by column, the output projection and the MLP's second linear "
              "by row), lights up each all-reduce as its event arrives, and counts its bytes against %1.")
        .arg(QStringLiteral("4 \u00b7 2(t\u2212"
                            "1)/t \u00b7 b\u00b7s\u00b7h \u00b7 e"));
  return {};
}

QString TensorParallelView::measuredText() const {
  const auto [step, micro_batch] = model_.completeMicroBatch(layer());
  if (step == 0) return tr("Measured: no complete micro-batch of layer %1 yet.").arg(layer());
  QStringList sent;
  const QLocale locale;
  for (int rank : model_.group(layer()))
    sent << tr("rank %1: %2 B").arg(rank).arg(locale.toString(model_.bytesSent(rank, layer(), step, micro_batch)));
  return tr("Measured bytes sent per rank for layer %1 (step %2, micro-batch %3): %4")
      .arg(layer())
      .arg(step)
      .arg(micro_batch)
      .arg(sent.join(QStringLiteral(", ")));
}

QString TensorParallelView::formulaText() const {
  const TensorParallelTraffic& f = model_.formula();
  return tr("Formula per rank per layer per micro-batch: %1 = %2 B with %3")
      .arg(QString::fromStdString(f.formula), QLocale().toString(f.bytes), QString::fromStdString(f.values));
}

QString TensorParallelView::placeText(TensorParallelPlace place) const {
  return place == TensorParallelPlace::attention_in || place == TensorParallelPlace::mlp_in ? QStringLiteral("f")
                                                                                            : QStringLiteral("g");
}

QString TensorParallelView::collectiveText(const TensorParallelCollective& c) const {
  const QString op = c.op == CommOp::all_reduce       ? tr("all-reduce")
                     : c.op == CommOp::all_gather     ? tr("all-gather")
                     : c.op == CommOp::reduce_scatter ? tr("reduce-scatter")
                                                      : tr("collective");
  const QString pass = c.pass == TensorParallelPass::forward     ? tr("forward")
                       : c.pass == TensorParallelPass::recompute ? tr("recompute")
                                                                 : tr("backward");
  return tr("%1, %2").arg(op, pass) + QLatin1Char('\n') + tr("step %1, micro-batch %2").arg(c.step).arg(c.micro_batch);
}

}  // namespace shardscope::ui
