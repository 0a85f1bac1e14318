// SPDX-License-Identifier: GPL-3.0-or-later
// The ZeRO sharding view: a grid of ranks (rows) x partitions (columns) showing
// which model states each rank holds, as the run's sharding plan
// (plan/sharding_plan.h) says, with three thin bands per cell (parameters,
// gradients, optimizer states). Under ZeRO-0/2/3 the columns are the units
// (embeddings, every layer, the head), each split into Nd chunks under ZeRO-2/3
// of which data-parallel rank r owns chunk r; a rank holds only its pipeline
// stage's units. Under ZeRO-1 the columns are the Nd flat shards of each
// stage. Live activity comes only from events: ZeRO-3 `shard` gathers light a
// unit's parameter band on that rank until its release, and the per-unit
// reduce-scatters / all-gathers (comm_span with a unit) flash the gradient /
// parameter band; memory samples give the bytes each rank's ledger holds. The
// model (ZeroViewModel) is kept apart from the painting so tests can inspect it.
#pragma once

#include <QWidget>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "events/event.h"
#include "plan/sharding_plan.h"
#include "views/event_view.h"
#include "views/layer_view.h"
#include "views/step_replay.h"

class QPainter;
class QTimer;

namespace shardscope::ui {

class ZeroViewModel {
 public:
  enum class State { parameters = 0, gradients = 1, optimizer = 2 };

  void reset(const RunPlan& run);
  void consume(const std::vector<Event>& events);

  int stage() const { return plan_ ? plan_->zero_stage() : 0; }
  int dp() const { return plan_ ? plan_->dp() : 1; }
  int ranks() const { return plan_ ? plan_->grid().world_size() : 1; }  // rows: global ranks (dp x pp)
  int layers() const { return layers_; }
  // The run's plan; empty before the first run.
  const std::optional<ShardingPlan>& plan() const { return plan_; }
  // Columns: the units (ZeRO-0/2/3: L + 2) or the Nd flat shards (ZeRO-1).
  int columns() const { return plan_ && plan_->flat_optimizer_shards() ? dp() : layers_ + 2; }
  // Sub-chunks drawn per cell: Nd under ZeRO-2/3, else 1.
  int chunks() const { return plan_ ? plan_->chunks_per_unit() : 1; }
  std::int64_t lastStep() const { return last_step_; }
  // Bytes of a model state on a rank: as the plan says, and as its ledger's
  // latest memory sample holds (-1 before the first sample).
  std::int64_t planBytes(int rank, ModelState s) const;
  std::int64_t ledgerBytes(int rank, ModelState s) const;

  // Resident states (steady state, outside a gather): the whole partition,
  // or one chunk of it (chunk < chunks()).
  bool holds(int rank, int column, State s) const;
  bool holdsChunk(int rank, int column, int chunk, State s) const;
  // ZeRO-3: is this unit gathered on this rank right now?
  bool gathered(int rank, int unit) const;
  int gathered_units(int rank) const;

  // Counts of one step on one global rank.
  int gathers(std::int64_t step, int rank) const;
  int releases(std::int64_t step, int rank) const;
  int reduce_scatters(std::int64_t step, int rank) const;  // per-unit gradient reduce-scatters
  int all_gathers(std::int64_t step, int rank) const;      // parameter all-gathers (units or ZeRO-1 shards)

  // Latest event time of activity on a band (-1: none); and the latest event time seen.
  std::int64_t activity_ns(int rank, int column, State s) const;
  std::int64_t latest_ns() const { return latest_ns_; }
  std::int64_t step_start_ns() const { return step_start_ns_; }
  // "One step, slowly": forget a step's activity and counts (and every open
  // gather) so its events can be fed again from `start_ns`.
  void restartStep(std::int64_t step, std::int64_t start_ns);

 private:
  using Key = std::pair<std::int64_t, int>;  // (step, rank)
  void touch(int rank, int column, State s, std::int64_t ns);

  std::optional<ShardingPlan> plan_;
  int layers_ = 0;
  std::map<int, MemoryBytes> ledger_;  // rank -> its latest memory sample
  std::int64_t last_step_ = 0;
  std::int64_t latest_ns_ = 0;
  std::int64_t step_start_ns_ = 0;
  std::map<int, std::map<int, int>> open_;  // rank -> unit -> open gathers
  std::map<Key, int> gathers_, releases_;
  // (step, rank) -> distinct (micro-batch, unit) collectives
  std::map<Key, std::set<std::pair<int, int>>> reduce_scatters_, all_gathers_;
  std::map<std::tuple<int, int, int>, std::int64_t> activity_;  // (rank, column, state) -> ns
};

class ZeroView : public QWidget, public EventView {
  Q_OBJECT

 public:
  explicit ZeroView(QWidget* parent = nullptr);

  void reset(const RunPlan& run) override;
  void consume(const std::vector<Event>& events) override;
  void refresh() override;
  // "One step, slowly": the step's gathers and collectives fed again over
  // max(its length, 2 s) / speed of wall time; the live model comes back after.
  bool drawing() const override;
  void setPlaybackSpeed(double speed) override { speed_ = speed; }
  void replayStep(std::int64_t step) override;

  const ZeroViewModel& model() const { return model_; }
  // Caption texts (also painted): the stage's per-rank formula (from the plan)
  // and this step's counts; a rank's model-state bytes (its ledger's, or the
  // plan's before the first memory sample).
  QString formulaText() const;
  QString countsText() const;
  // With tensor parallelism: what a row holds (one tp rank's slice, sharded
  // over the dp ranks of that tp rank); empty with tp 1.
  QString tensorParallelText() const;
  QString rankLabel(int rank) const;  // "rank 3 · stage 1 · tp 1": the stage with pipelines, the tp rank with tp
  QString bytesText(int rank) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;  // a language switch: repaint (texts are tr() at paint time)

 private:
  // Where the rank rows are drawn (zero_view_paint.cpp).
  struct GridGeometry {
    int labelW, countsW, gridLeft, cellW, top, rowH, gap, bandH;
  };
  QString columnLabel(int column) const;
  // 0..1: how recently the band was active (1: the latest event).
  double flash(int rank, int column, ZeroViewModel::State s) const;
  // The painting's parts, top to bottom; each returns the y below what it drew.
  int paintCaption(QPainter& p, int y) const;
  int paintLegend(QPainter& p, int y) const;
  GridGeometry gridGeometry(int top) const;
  void paintColumnHeaders(QPainter& p, const GridGeometry& g) const;
  void paintRankRow(QPainter& p, int rank, const GridGeometry& g) const;
  QString rowText(int rank) const;    // this step's running count on a rank, then its model-state bytes

  void replayTick();

  ZeroViewModel model_;  // while replaying, the replayed step's; live_ holds the run's
  LiveModel<ZeroViewModel> live_;
  StepReplay replay_;  // the latest steps' shard and comm events, and the replay's cursor
  double speed_ = 1.0;
  QTimer* timer_;
};

}  // namespace shardscope::ui
