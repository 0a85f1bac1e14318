// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/experts_view.h"

#include <QLocale>
#include <algorithm>
#include <exception>
#include <numeric>

#include "config/run_config.h"
#include "model/mixture_of_experts.h"
#include "model/model_config.h"

namespace shardscope::ui {

namespace {
constexpr std::int64_t kKeptSteps = 3;  // per-step sums kept: the latest complete one is shown
}  // namespace

void ExpertsModel::reset(const RunPlan& run) {
  *this = ExpertsModel();
  const RunConfig& config = run.config();
  world_ = config.layout.world_size();
  ep_ = std::max(1, config.expert_parallel);
  try {
    const ModelConfig model = run_model_config(config);
    layers_ = model.layers;
    experts_ = model.experts;
    top_k_ = model.top_k;
    moe_every_ = std::max(1, model.moe_every);
    capacity_factor_ = model.capacity_factor;
    tokens_per_forward_ = config.micro_batch_size() * config.seq;
    if (experts_ > 0) capacity_per_forward_ = moe_capacity(model, tokens_per_forward_);
  } catch (const std::exception&) {  // a model the engine cannot read: nothing to draw
    layers_ = experts_ = 0;
  }
}

bool ExpertsModel::moeLayer(int layer) const {
  return experts_ > 0 && layer >= 0 && layer < layers_ && layer % moe_every_ == 0;
}

void ExpertsModel::forgetBefore(std::int64_t step) {
  const Key first{step - kKeptSteps + 1, -1};
  loads_.erase(loads_.begin(), loads_.lower_bound(first));
  matrices_.erase(matrices_.begin(), matrices_.lower_bound(first));
}

void ExpertsModel::consume(const std::vector<Event>& events) {
  if (experts_ == 0) return;
  for (const Event& e : events) {
    if (e.kind == EventKind::expert_load && e.expert >= 0 && e.expert < experts_) {
      if (e.step > latest_load_step_) forgetBefore(latest_load_step_ = e.step);
      ExpertLayerLoad& load = loads_[{e.step, e.layer}];
      load.tokens.resize(static_cast<std::size_t>(experts_), 0);
      load.tokens[static_cast<std::size_t>(e.expert)] = e.expert_tokens;
      load.capacity = e.expert_capacity;
      load.routed = e.routed;
      load.dropped = e.dropped;
      aux_loss_[e.step] = e.aux_loss;
    } else if (e.kind == EventKind::step_metrics) {
      aux_loss_[e.step] = e.aux_loss;
      completed_step_ = std::max(completed_step_, e.step);
    } else if (e.kind == EventKind::comm_span && e.purpose == CommPurpose::expert_parallel && e.op == CommOp::send &&
               e.src >= 0 && e.src < world_ && e.dst >= 0 && e.dst < world_) {
      ++transfers_;
      transfer_bytes_ += e.bytes;
      auto& m = matrices_[{e.step, e.unit - 1}];  // the event's unit is 1 + layer (parallel/expert_parallel.cpp)
      m.resize(static_cast<std::size_t>(world_) * static_cast<std::size_t>(world_), 0);
      m[static_cast<std::size_t>(e.src) * static_cast<std::size_t>(world_) + static_cast<std::size_t>(e.dst)] +=
          e.bytes;
    }
  }
}

void ExpertsModel::restartStep(std::int64_t step) {
  loads_.erase(loads_.lower_bound({step, -1}), loads_.end());
  aux_loss_.erase(aux_loss_.lower_bound(step), aux_loss_.end());
  matrices_.clear();
  latest_load_step_ = loads_.empty() ? 0 : loads_.rbegin()->first.first;
  completed_step_ = step - 1;
}

const ExpertLayerLoad* ExpertsModel::load(std::int64_t step, int layer) const {
  const auto it = loads_.find({step, layer});
  return it == loads_.end() ? nullptr : &it->second;
}

std::vector<std::int64_t> ExpertsModel::matrix(std::int64_t step, int layer) const {
  const auto it = matrices_.find({step, layer});
  if (it == matrices_.end()) return std::vector<std::int64_t>(static_cast<std::size_t>(world_) * world_, 0);
  return it->second;
}

std::int64_t ExpertsModel::shownMatrixStep(int layer) const {
  std::int64_t latest = 0, complete = 0;
  for (const auto& [key, m] : matrices_) {
    if (key.second != layer) continue;
    latest = std::max(latest, key.first);
    if (key.first <= completed_step_) complete = std::max(complete, key.first);
  }
  return complete > 0 ? complete : latest;
}

ExpertsView::ExpertsView(QWidget* parent) : LayerView(QStringLiteral("expertsLayer"), parent) {
  retranslate();
}

void ExpertsView::retranslate() {
  setLayerTexts(tr("Layer:"), tr("The MoE layer whose routing and all-to-all are shown"));
  update();
}

void ExpertsView::reset(const RunPlan& run) {
  forgetReplay();
  model_.reset(run);
  setLayerCount(model_.layers());
  update();
}

void ExpertsView::consume(const std::vector<Event>& events) {
  live_.forEvents(model_).consume(events);
  keepForReplay(events);
}

// A dense model's steps are not replayed here: its step_metrics alone would hold the run for nothing.
bool ExpertsView::keepsForReplay(const Event& e) const {
  if (model_.experts() == 0) return false;
  return e.kind == EventKind::expert_load || e.kind == EventKind::step_metrics ||
         (e.kind == EventKind::comm_span && e.purpose == CommPurpose::expert_parallel && e.op == CommOp::send);
}

void ExpertsView::startReplay(std::int64_t step) {
  live_.setAside(model_);
  model_.restartStep(step);
}

QString ExpertsView::placeholderText() const {
  if (model_.layers() == 0) return tr("Run a mixture-of-experts model (gpt-tiny-moe) to see tokens routed to experts.");
  if (model_.experts() == 0)
    return tr(
        "This model is dense: every token runs the same MLP. Choose a mixture-of-experts model "
        "(--model gpt-tiny-moe, with Expert-parallel ranks of 2 or more for the all-to-all) to see the "
        "tokens each expert takes per step against its capacity, the dropped choices, the load-balancing "
        "loss and the bytes the all-to-all moves between ranks.");
  if (!model_.moeLayer(layer())) return tr("Layer %1 has a dense MLP; choose a MoE layer.").arg(layer());
  return {};
}

QString ExpertsView::routingText() const {
  const std::int64_t step = model_.latestLoadStep();
  const ExpertLayerLoad* load = model_.load(step, layer());
  const QLocale locale;
  const QString capacity = tr("capacity ceil(%1 \u00b7 %2 tokens \u00b7 k %3 / E %4) = %5 per forward")
                               .arg(model_.capacityFactor())
                               .arg(model_.tokensPerForward())
                               .arg(model_.topK())
                               .arg(model_.experts())
                               .arg(model_.capacityPerForward());
  if (load == nullptr) return tr("Routing: no step of layer %1 yet; %2.").arg(layer()).arg(capacity);
  const double percent =
      load->routed > 0 ? 100.0 * static_cast<double>(load->dropped) / static_cast<double>(load->routed) : 0.0;
  return tr("Step %1, layer %2: %3 choices routed, %4 dropped (%5%); %6, %7 places per expert over the step.")
      .arg(step)
      .arg(layer())
      .arg(locale.toString(load->routed))
      .arg(locale.toString(load->dropped))
      .arg(percent, 0, 'f', 1)
      .arg(capacity)
      .arg(locale.toString(load->capacity));
}

QString ExpertsView::allToAllText() const {
  if (model_.expertRanks() < 2)
    return tr(
        "All-to-all: every expert on every rank (Expert-parallel ranks 1): no tokens travel. Run with "
        "--ep 2 to send each choice to its expert's rank.");
  const std::int64_t step = model_.shownMatrixStep(layer());
  const std::vector<std::int64_t> m = model_.matrix(step, layer());
  const std::int64_t total = std::accumulate(m.begin(), m.end(), std::int64_t{0});
  return tr("All-to-all of layer %1 in step %2 (dispatch and combine, forward and backward): %3 B between ranks.")
      .arg(layer())
      .arg(step)
      .arg(QLocale().toString(total));
}

}  // namespace shardscope::ui
