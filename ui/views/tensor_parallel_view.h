// SPDX-License-Identifier: GPL-3.0-or-later
// The Tensor parallel view: one transformer layer's four weight matrices drawn
// split over the tp ranks (Megatron-LM, Shoeybi et al. 2019). Y = X·W with W
// drawn in × out: W_qkv (C × 3C) and the MLP's first linear (C × 4C) are
// column-parallel, split by output features (C × 3C/t, C × 4C/t per rank);
// the attention output projection (C × C) and the MLP's second linear
// (4C × C) are row-parallel, split by input features (C/t × C, 4C/t × C).
// Each shard is in its rank's colour. The conjugate operators sit where the
// model runs them: f before each column-parallel layer (identity forward,
// all-reduce backward), g after each row-parallel one (all-reduce forward,
// identity backward). Under sequence parallelism (Korthikanti et al. 2022)
// the same places run all-gathers and reduce-scatters: the view reads the op
// from each event, it never assumes one.
//
// Only events are drawn: the comm_span transfers with purpose tensor_parallel
// of a layer's unit (1 + l), from the tp group of data-parallel rank 0. A
// collective starts at its first ring step; its place follows from its order
// within the layer's micro-batch (forward: the places in forward order,
// recompute the same again, backward: in reverse). The bytes each rank sent
// per layer per micro-batch are summed from the events, beside
// plan/tensor_parallel_traffic.h's 4 · 2(t−1)/t · b·s·h · e.
// TensorParallelModel keeps the counts apart from the painting, for tests.
// "One step, slowly" feeds the step's layer transfers again (LayerView's
// replay) from the model as it stood before the step: no collective lit, the
// step's counts taken off, the previous step's bytes in the footer until a
// micro-batch of the step completes.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "events/event.h"
#include "layout/grid.h"
#include "plan/tensor_parallel_traffic.h"
#include "views/layer_view.h"

class QFontMetrics;
class QPainter;

namespace shardscope::ui {

// Where a layer's tensor-parallel collectives run, in forward order.
enum class TensorParallelPlace { attention_in = 0, attention_out = 1, mlp_in = 2, mlp_out = 3 };
inline constexpr int kTensorParallelPlaces = 4;
enum class TensorParallelPass { forward = 0, recompute = 1, backward = 2 };

struct TensorParallelCollective {
  CommOp op = CommOp::all_reduce;
  TensorParallelPass pass = TensorParallelPass::forward;
  TensorParallelPlace place = TensorParallelPlace::attention_out;
  std::int64_t step = 0;
  int micro_batch = -1;
  int layer = -1;
  int rank = -1;          // the global rank whose first ring step started it
  std::int64_t seen = 0;  // consumption order, from 1
};

class TensorParallelModel {
 public:
  void reset(const RunPlan& run);
  void consume(const std::vector<Event>& events);

  int tp() const { return grid_.tp(); }
  int layers() const { return layers_; }
  int channels() const { return channels_; }
  int heads() const { return heads_; }
  const Grid& grid() const { return grid_; }
  // The shown tp group of a layer: the ranks of data-parallel rank 0 at the
  // layer's pipeline stage, by tp rank.
  std::vector<int> group(int layer) const;
  int stageOf(int layer) const;

  // Layer transfers consumed (purpose tensor_parallel, unit 1 + l), every group; of one layer.
  std::int64_t transfers() const { return transfers_; }
  std::int64_t transfers(int layer) const;
  // Collectives started on the shown group's ranks, of one layer (each rank's count).
  std::int64_t collectives(int layer) const;
  // The latest collective at each place of a layer (seen 0: none yet), and the latest of the layer.
  const TensorParallelCollective& latest(int layer, TensorParallelPlace place) const;
  const TensorParallelCollective* latest(int layer) const;

  // Bytes a rank sent for a layer in one micro-batch of a step, summed from the events.
  std::int64_t bytesSent(int rank, int layer, std::int64_t step, int micro_batch) const;
  // The latest (step, micro-batch) whose transfers of this layer are all in
  // on the group's first rank (passes · 4(t−1) of them); step 0: none yet.
  std::pair<std::int64_t, int> completeMicroBatch(int layer) const;
  // The formula's bytes per rank per layer per micro-batch, its text and its values.
  const TensorParallelTraffic& formula() const { return formula_; }
  // A replay of `step` starts: the model as before the step (this step's and
  // later transfers and collectives uncounted, none lit, the latest complete
  // micro-batch an earlier step's) for the step's events to come again.
  void restartStep(std::int64_t step);

 private:
  using Key = std::tuple<std::int64_t, int, int, int>;  // (step, rank, layer, micro_batch)
  struct KeyData {
    std::int64_t bytes = 0;
    int transfers = 0;
    int collectives = 0;
    int per_pass = 0;  // collectives per pass: 2 all-reduces, or 4 all-gathers / reduce-scatters
  };
  void add(const Event& e);
  TensorParallelCollective placeOf(const Event& e, KeyData& key) const;

  Grid grid_{1, 1};
  int layers_ = 0, channels_ = 0, heads_ = 0;
  int passes_ = 2;             // forward and backward; 3 with the recompute
  std::vector<int> stage_of_;  // by layer
  TensorParallelTraffic formula_;
  std::map<Key, KeyData> keys_;
  std::int64_t transfers_ = 0;
  std::int64_t seen_ = 0;
  std::map<int, std::int64_t> layer_transfers_, layer_collectives_;
  std::map<int, std::array<TensorParallelCollective, kTensorParallelPlaces>> latest_;
  std::map<int, std::pair<std::int64_t, int>> complete_;  // by layer
};

class TensorParallelView : public LayerView {
  Q_OBJECT

 public:
  explicit TensorParallelView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;

  const TensorParallelModel& model() const { return model_; }
  // The footer's two lines: the measured bytes of the shown layer and the formula.
  QString measuredText() const;
  QString formulaText() const;
  // What the view says in place of the drawing (tp 1, or before a run); empty when it draws.
  QString placeholderText() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void retranslate() override;
  bool keepsForReplay(const Event& e) const override;
  void startReplay(std::int64_t step) override;
  void replayEvents(const std::vector<Event>& events) override { model_.consume(events); }
  void finishReplay() override { live_.bringBack(model_); }

 private:
  QString placeText(TensorParallelPlace place) const;
  QString collectiveText(const TensorParallelCollective& c) const;
  // tensor_parallel_paint.cpp
  struct Block {
    struct Matrix {
      int in = 0, out = 0;  // the whole matrix (Y = X·W: in rows, out columns)
      bool by_column = true;
      QString label;  // its shape per rank and how it is split
    };
    QString name;
    Matrix a, b;  // the column-parallel matrix, then the row-parallel one
    QString middle;
    TensorParallelPlace before = TensorParallelPlace::attention_in, after = TensorParallelPlace::attention_out;
  };
  Block attentionBlock() const;
  Block mlpBlock() const;
  void paintBlock(QPainter& p, const Block& b, const QRectF& area) const;
  void paintMatrix(QPainter& p, const QRectF& slot, double scale, const Block::Matrix& w) const;
  void paintOperator(QPainter& p, const QRectF& slot, TensorParallelPlace place, bool f) const;
  int paintFooter(QPainter& p, const QRectF& area) const;

  TensorParallelModel model_;  // while replaying, the replayed step's; live_ holds the run's
  LiveModel<TensorParallelModel> live_;
};

}  // namespace shardscope::ui
