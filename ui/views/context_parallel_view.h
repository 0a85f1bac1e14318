// SPDX-License-Identifier: GPL-3.0-or-later
// The Context parallel view: ring attention (Liu et al. 2023; Megatron-LM's
// and torchtitan's context parallelism) on one cp group. Each cp rank holds
// seq/cp tokens of every sequence and, per layer, computes its queries
// against every rank's key/value block as the blocks travel the ring: at
// ring step s rank r holds the block of rank (r − s) mod cp and sends it on.
//
// The view draws, for one layer and pass of the latest micro-batch:
//  - the cp ranks on a ring, with the blocks sent at the latest ring step;
//  - the sequence's attention matrix in 2cp × 2cp tiles (query chunks down,
//    key chunks across), each row of tiles in its query rank's colour,
//    filled in as that rank receives the key block; with a causal mask the
//    tiles above the diagonal are masked and the diagonal ones half;
//  - work per rank counted from the tiles (a diagonal tile counts ½): with
//    contiguous chunks rank r has rows 2r and 2r+1, 4r + 2 tiles; the
//    zig-zag split gives rank r chunks r and 2cp − 1 − r, 2cp tiles each;
//  - bytes sent at each ring step, summed from the events, and each rank's
//    bytes per layer per micro-batch beside plan/context_parallel_traffic.h.
//
// Only events are drawn: comm_span sends with purpose context_parallel from
// the cp group of data-parallel rank 0 and tp rank 0 at the layer's stage;
// an event's chunk is the block (the cp rank whose keys and values it holds),
// ring_step its step, phase all_gather a key/value block and reduce_scatter
// its gradient, compute the pass. ContextParallelModel keeps the counts apart
// from the painting, for tests. "One step, slowly" draws the step's sends
// again from an empty ring (LayerView's replay).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "events/event.h"
#include "layout/grid.h"
#include "plan/context_parallel_traffic.h"
#include "views/layer_view.h"

class QComboBox;
class QPainter;

namespace shardscope::ui {

// One layer's ring in one pass of one micro-batch, as its events arrived.
struct ContextParallelPass {
  std::int64_t step = 0;  // 0: none yet
  int micro_batch = -1;
  bool backward = false;
  // held[r][b]: cp rank r has had block b this pass (its own from the start).
  std::vector<std::vector<bool>> held;
  std::vector<std::int64_t> step_bytes;  // bytes sent by the group at each ring step (blocks and gradients)
  std::vector<std::int64_t> rank_bytes;  // by cp rank
  // (from cp rank, block) sent at each ring step: key/value blocks, and in backward their gradients.
  std::vector<std::vector<std::pair<int, int>>> block_sends, gradient_sends;
  int latest_ring_step = -1;      // the furthest ring step reached (of the gradients, once they travel)
  bool latest_gradients = false;  // the sends drawn carry dK, dV
  int sends = 0;
  // The sends of latest_ring_step, drawn as arrows.
  const std::vector<std::pair<int, int>>& latestSends() const;
};

class ContextParallelModel {
 public:
  void reset(const RunPlan& run);
  void consume(const std::vector<Event>& events);

  int cp() const { return cp_; }
  bool zigzag() const { return zigzag_; }
  bool causal() const { return causal_; }
  int layers() const { return layers_; }
  // The shown cp group of a layer (global ranks by cp rank).
  std::vector<int> group(int layer) const;
  // The cp rank holding sequence chunk c of 2cp (zig-zag: r and 2cp − 1 − r; contiguous: 2r and 2r + 1).
  int chunkOwner(int chunk) const;
  // A tile (query chunk q, key chunk k) of 2cp × 2cp: 0 masked, 1 half (diagonal), 2 whole.
  int tileHalves(int query, int key) const;
  // Work of cp rank r in tiles of 2cp × 2cp, in halves: its query chunks' tiles that the mask keeps.
  int workHalves(int cp_rank) const;
  // The latest pass of a layer (forward or backward); step 0 when none.
  const ContextParallelPass& latest(int layer, bool backward) const;
  // Tiles cp rank r has filled in that pass, in halves (those whose key block it has held).
  int filledHalves(const ContextParallelPass& pass, int cp_rank) const;
  // Sends consumed (purpose context_parallel), every group.
  std::int64_t transfers() const { return transfers_; }
  const ContextParallelTraffic& formula() const { return formula_; }
  // A replay starts: no pass drawn until its sends come again.
  void clearPasses() { latest_.clear(); }

 private:
  void add(const Event& e, int layer, int cp_rank);
  ContextParallelPass fresh(const Event& e) const;

  Grid grid_{1, 1};
  int cp_ = 1, layers_ = 0;
  bool zigzag_ = true, causal_ = true;
  std::vector<int> stage_of_;
  ContextParallelTraffic formula_;
  std::map<std::pair<int, bool>, ContextParallelPass> latest_;  // (layer, backward)
  std::int64_t transfers_ = 0;
};

class ContextParallelView : public LayerView {
  Q_OBJECT

 public:
  explicit ContextParallelView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;

  const ContextParallelModel& model() const { return model_; }
  bool backward() const { return backward_; }
  void setBackward(bool backward);
  // What the view says in place of the drawing (cp 1, or before a run); empty when it draws.
  QString placeholderText() const;
  // The footer's lines: work per rank, bytes per ring step, bytes per rank against the formula.
  QString workText() const;
  QString ringBytesText() const;
  QString formulaText() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void retranslate() override;
  bool keepsForReplay(const Event& e) const override;
  void startReplay(std::int64_t step) override;
  void replayEvents(const std::vector<Event>& events) override { model_.consume(events); }
  void finishReplay() override { live_.bringBack(model_); }

 private:
  // context_parallel_paint.cpp
  void paintRing(QPainter& p, const QRectF& area) const;
  void paintTiles(QPainter& p, const QRectF& area) const;
  int paintFooter(QPainter& p, const QRectF& area) const;

  ContextParallelModel model_;  // while replaying, the replayed step's; live_ holds the run's
  LiveModel<ContextParallelModel> live_;
  QComboBox* pass_box_;
  bool backward_ = false;
};

}  // namespace shardscope::ui
