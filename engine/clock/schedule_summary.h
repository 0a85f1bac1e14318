// SPDX-License-Identifier: GPL-3.0-or-later
// What a run's schedule really did, computed from its events (on the virtual
// clock by default, clock/device_clock.h), for the CLI's closing lines and the
// GUI: the pipeline bubble beside its formula, and how much of DDP's bucket
// communication overlapped the backward.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "clock/wait_summary.h"
#include "events/event.h"

namespace shardscope {

// The bubble of a pipeline (pp > 1), per flush: one (step, data-parallel
// replica, accumulation step) of m micro-batches through p stages. Its window
// W runs from the first stage's first forward to the last backward to end; a
// stage's busy time is the sum of its whole-stage forward and backward spans.
// The stages idle, in all, 1 - sum(busy) / (p W). Two causes share that idle
// time, and only the first is the pipeline's bubble:
//   bubble (fill and drain): in the formula's pipeline, paced by its slowest
//     stage (t_max = max(busy) / m per micro-batch), every stage idles p - 1
//     slots of t_max while the pipeline fills and drains: (p - 1) / (m + p - 1)
//     (GPipe, Huang et al. 2019; 1F1B has the same, Narayanan et al. 2021). A
//     stage's idle time up to (p - 1) t_max is its fill and drain;
//   stage imbalance: the rest, what a faster stage idles beyond that, waiting
//     in the steady state for the slowest (a stage with fewer layers, a last
//     stage that also runs the head, a slower rank); 0 for equal stages.
// So bubble = sum_s min(W - busy_s, (p - 1) t_max) / (p W) and imbalance =
// idle - bubble >= 0. (The slowest stage itself may idle less than (p - 1)
// t_max: the faster stages fill and drain sooner, and 1F1B's warm-up hides
// some of it; its idle time is then all fill and drain.)
// With each stage's measured time per micro-batch t_s, GPipe's fill and drain
// take sum(t_s) + (m - 1) max(t_s), so the stages' idle time in all is
//   for_stages = 1 - m sum(t_s) / (p (sum(t_s) + (m - 1) max(t_s)))
// which is the formula when all t_s are equal. (1F1B idles less where its
// slowest stage comes first: its warm-up forwards overlap the others' fill.)
struct PipelineBubble {
  int stages = 0, micro_batches = 0;
  int flushes = 0;                          // windows measured
  double measured = 0.0;                    // the bubble (fill and drain, above), of the median flush
  double imbalance = 0.0;                   // stage imbalance, of the same flush
  double idle = 0.0;                        // measured + imbalance: all the stages' idle time
  double formula = 0.0;                     // (p - 1) / (m + p - 1)
  double for_stages = 0.0;                  // GPipe's idle time in all with the stages' measured times
  double slowest_stage = 1.0;               // max(t_s) / mean(t_s), t_s each stage's median busy time over the flushes
  std::vector<std::int64_t> stage_busy_ns;  // per stage, summed over the flushes and replicas
  // The mean F, B and W box over the stages and flushes measured: T_F, T_B and
  // T_W of the zero-bubble formulas (no W boxes: weight_ns 0, B is the whole backward).
  double forward_ns = 0.0, backward_ns = 0.0, weight_ns = 0.0;
  // The same boxes on the slowest stage (most busy time in the median flush), which paces the
  // steady state: with unequal stages (gpt-tiny at pp 4: the head's matmul on
  // the last stage) the formulas hold for it, and the others idle the difference.
  int slowest_stage_index = 0;
  double slowest_forward_ns = 0.0, slowest_backward_ns = 0.0, slowest_weight_ns = 0.0;
  // Model chunks per stage, from the boxes' Event::chunk (interleaved 1F1B: v, whose
  // bubble is (p − 1)/(v·m + p − 1), clock/pipeline_bubble.h); 1 otherwise.
  int virtual_stages = 1;
};

// The zero-bubble formulas (clock/pipeline_bubble.h) for a pipeline paced by
// its slowest stage: evaluated with that stage's T_F, T_B and T_W, its step
// lasts m(T_F+T_B+T_W) / (1 − formula); every stage's busy time over p such
// steps is the idle fraction, 1 − (1 − formula) · mean(t_s) / max(t_s).
// With equal stages, the formulas themselves.
double zb_h1_bubble_paced(const PipelineBubble& b);
double zb_h2_bubble_paced(const PipelineBubble& b);

// DDP's bucket all-reduces against the backward, per (rank, step): the time
// covered by the rank's bucket transfers (their union), and the part of it
// inside the rank's whole-stage backward spans. A bucket's all-reduce started
// before backward ended when its first ring step had begun on every rank of
// the data-parallel group before the group's last backward ended.
struct DdpOverlap {
  int buckets = 0;                          // distinct buckets seen
  int min_buckets_started_in_backward = 0;  // the fewest over (step, stage)
  std::int64_t comm_ns = 0;                 // summed over (rank, step)
  std::int64_t overlapped_ns = 0;
  double fraction() const {
    return comm_ns > 0 ? static_cast<double>(overlapped_ns) / static_cast<double>(comm_ns) : 0.0;
  }
};

struct ScheduleSummary {
  std::int64_t first_step = 0, last_step = 0;  // the steps counted
  std::optional<PipelineBubble> bubble;        // pipeline runs
  std::optional<DdpOverlap> overlap;           // runs whose events have DDP buckets
};

// The data-parallel collectives as they ran (against the formulas of
// plan/data_parallel_traffic.h): a transfer between two ranks of one stage's
// data-parallel group (stage = rank / dp) that moves model states for the
// step (its purpose is gradients or parameters). Whole native calls (dst -1: NCCL, MPI's native collectives) are not
// transfers: their ring steps are not events.
bool is_data_parallel_transfer(const Event& e, int dp);
// A step's data-parallel transfers, bytes by global rank.
struct MeasuredTraffic {
  std::map<int, std::int64_t> sent, received;
};
MeasuredTraffic measure_data_parallel_traffic(std::span<const Event> events, std::int64_t step, int dp);
// With tensor parallelism the ranks of a stage are dp x tp consecutive ones:
// pass dp x tp as `dp` here and to summarize_schedule (each (dp, tp) pair is
// then its own pipeline replica).

// Tensor parallelism's transfers inside a layer (Megatron's f and g, model/
// tensor_parallel.h): a comm transfer of purpose tensor_parallel tagged with
// a layer's unit (1 + l). Their bytes by (sending rank, unit, micro-batch):
// what plan/tensor_parallel_traffic.h's formula predicts for each.
bool is_tensor_parallel_layer_transfer(const Event& e);
using LayerTraffic = std::map<std::tuple<int, int, int>, std::int64_t>;  // (src, unit, micro-batch) -> bytes
LayerTraffic measure_tensor_parallel_traffic(std::span<const Event> events, std::int64_t step);

// Grid placement as layout/grid.h: stage = rank / dp. Step 1 (allocations,
// first touches) is left out when later steps are there.
ScheduleSummary summarize_schedule(std::span<const Event> events, int dp, int pp, int micro_batches);

// The closing lines, in English: "bubble measured 25.4% · formula
// (p−1)/(m+p−1) = 27.3% · stage imbalance idles another 7.8% ..." and "communication overlapped with backward: 64.0% ...".
std::vector<std::string> schedule_summary_lines(const ScheduleSummary& summary, std::string_view clock_name);

// An EventSink that keeps what summarize_schedule reads (whole-stage compute
// spans, DDP bucket transfers, ring attention's block transfers) and the optimizer's spans of the latest steps, the
// bytes of their data-parallel model-state transfers (plan/data_parallel_traffic.h) summed per (sender, receiver), and
// their waits (clock/wait_summary.h), and passes every event on to `next` (may be null). emit may be called from any
// thread.
class ScheduleEvents final : public EventSink {
 public:
  explicit ScheduleEvents(EventSink* next = nullptr, std::int64_t keep_steps = 64)
      : next_(next), keep_steps_(keep_steps) {}
  void emit(const Event& event) override;
  std::vector<Event> events() const;
  // A step's data-parallel transfers, bytes by global rank (grid: whose stage is whose).
  MeasuredTraffic data_parallel_traffic(std::int64_t step, int dp) const;
  // The kept steps' waits (clock/wait_summary.h), from `first_step` on.
  RankWaits waits(std::int64_t first_step) const;
  // A step's tensor-parallel layer transfers (is_tensor_parallel_layer_transfer).
  LayerTraffic tensor_parallel_traffic(std::int64_t step) const;

 private:
  EventSink* const next_;
  const std::int64_t keep_steps_;
  mutable std::mutex mutex_;
  std::vector<Event> kept_;
  std::map<std::int64_t, std::map<std::pair<int, int>, std::int64_t>> transfer_bytes_;  // step -> (src, dst) -> bytes
  std::map<std::int64_t, RankWaits> waits_;                                             // step -> its wait spans
  std::map<std::int64_t, LayerTraffic> layer_bytes_;  // step -> tensor-parallel layer transfers
  std::int64_t latest_step_ = 0;
};

}  // namespace shardscope
