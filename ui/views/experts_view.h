// SPDX-License-Identifier: GPL-3.0-or-later
// The Experts view: a mixture-of-experts run's routing (Switch Transformer,
// Fedus et al. 2021; GShard; model/mixture_of_experts.h) and its expert
// parallelism's all-to-all, drawn from the run's events:
//  - per MoE layer, the choices each expert took in the latest step (bars)
//    against its places, capacity = ceil(capacity_factor · tokens · k / E) per
//    forward times the step's forwards (a line), and the choices dropped over it;
//  - the load-balancing loss E · Σ f·P over the steps;
//  - the all-to-all's bytes between ranks for the layer in the latest step
//    (rows: the sending rank, columns: the receiving rank), summed from the
//    comm_span sends with purpose expert_parallel (unit 1 + layer).
// The routing comes from the expert_load events (one per layer and expert per
// step, the step's global figures) and step_metrics' aux loss. ExpertsModel
// keeps the sums apart from the painting, for tests. "One step, slowly" draws
// the step again (LayerView's replay): the all-to-all matrix filling from
// empty as its sends come, the step's routing and aux loss at its end, where
// the engine reports them.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "events/event.h"
#include "views/layer_view.h"

class QPainter;

namespace shardscope::ui {

// One MoE layer's routing in one step.
struct ExpertLayerLoad {
  std::vector<std::int64_t> tokens;  // by expert: choices kept
  std::int64_t capacity = 0;         // places per expert over the step
  std::int64_t routed = 0;           // the layer's choices made (tokens × k)
  std::int64_t dropped = 0;          // of those, over capacity
};

class ExpertsModel {
 public:
  void reset(const RunPlan& run);
  void consume(const std::vector<Event>& events);

  int experts() const { return experts_; }
  int topK() const { return top_k_; }
  int layers() const { return layers_; }
  bool moeLayer(int layer) const;
  int world() const { return world_; }
  int expertRanks() const { return ep_; }
  int capacityPerForward() const { return capacity_per_forward_; }
  double capacityFactor() const { return capacity_factor_; }
  int tokensPerForward() const { return tokens_per_forward_; }

  // The latest step with routing figures (0: none yet), and a layer's figures in a step (null: none).
  std::int64_t latestLoadStep() const { return latest_load_step_; }
  const ExpertLayerLoad* load(std::int64_t step, int layer) const;
  // The load-balancing loss by step.
  const std::map<std::int64_t, float>& auxLoss() const { return aux_loss_; }

  // The all-to-all bytes of a layer in a step, world × world (row sender, column receiver).
  std::vector<std::int64_t> matrix(std::int64_t step, int layer) const;
  // The step whose all-to-all a view shows: the latest complete step (its step_metrics
  // arrived) with sends, else the latest with sends; 0 when none.
  std::int64_t shownMatrixStep(int layer) const;
  // Sends consumed (purpose expert_parallel), and their bytes, every step and layer.
  std::int64_t transfers() const { return transfers_; }
  std::int64_t transferBytes() const { return transfer_bytes_; }
  // A replay of `step` starts: its routing, aux loss and every all-to-all matrix
  // forgotten, so the step's fill from empty; earlier steps' routing stays.
  void restartStep(std::int64_t step);

 private:
  using Key = std::pair<std::int64_t, int>;  // (step, layer)
  void forgetBefore(std::int64_t step);

  int experts_ = 0, top_k_ = 0, layers_ = 0, moe_every_ = 1, world_ = 1, ep_ = 1;
  int capacity_per_forward_ = 0, tokens_per_forward_ = 0;
  double capacity_factor_ = 0.0;
  std::map<Key, ExpertLayerLoad> loads_;
  std::map<std::int64_t, float> aux_loss_;
  std::map<Key, std::vector<std::int64_t>> matrices_;
  std::int64_t latest_load_step_ = 0, completed_step_ = 0;
  std::int64_t transfers_ = 0, transfer_bytes_ = 0;
};

class ExpertsView : public LayerView {
  Q_OBJECT

 public:
  explicit ExpertsView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;

  const ExpertsModel& model() const { return model_; }
  // What the view says in place of the drawing (a dense model, or before a run); empty when it draws.
  QString placeholderText() const;
  // The footer's lines: the shown layer's routing and capacity; the all-to-all's total.
  QString routingText() const;
  QString allToAllText() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void retranslate() override;
  bool keepsForReplay(const Event& e) const override;
  void startReplay(std::int64_t step) override;
  void replayEvents(const std::vector<Event>& events) override { model_.consume(events); }
  void finishReplay() override { live_.bringBack(model_); }

 private:
  // experts_paint.cpp
  void paintBars(QPainter& p, const QRectF& area) const;
  void paintAuxLoss(QPainter& p, const QRectF& area) const;
  void paintMatrix(QPainter& p, const QRectF& area) const;
  int paintFooter(QPainter& p, const QRectF& area) const;

  ExpertsModel model_;  // while replaying, the replayed step's; live_ holds the run's
  LiveModel<ExpertsModel> live_;
};

}  // namespace shardscope::ui
