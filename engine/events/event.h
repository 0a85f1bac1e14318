// SPDX-License-Identifier: GPL-3.0-or-later
// The events the engine emits while it works. Every view of the GUI and every
// recording is drawn from these; each one describes something that really
// happened, with monotonic timestamps (nanoseconds since the run started).
// An Event is a fixed-size plain struct so queues and recordings copy it as bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/memory_ledger.h"

namespace shardscope {

enum class EventKind : std::uint8_t {
  step_metrics = 0,   // one per optimizer step (rank 0 reports the global figures); never dropped
  compute_span = 1,   // forward / backward / recompute / optimizer of a stage and micro-batch
  comm_span = 2,      // one communication transfer (a ring chunk, a send, a broadcast, ...)
  shard = 3,          // ZeRO-3 parameter gather or release of a unit
  memory_sample = 4,  // a rank's ledger, current bytes by category
  log = 5,            // a line of text; never dropped
  error = 6,          // a failure (the rank and cause in text); never dropped
  overflow = 7,   // fp16: inf/NaN in a rank's gradients (text: the first tensor); the step is skipped; never dropped
  wait_span = 8,  // virtual clock: a rank idle inside a communication call until another rank got there
                  // (src: the rank it waited for, op: the call); see parallel/in_process_communicator.h
  // mixture of experts: one per MoE layer and expert per step, just before its step_metrics
  // (rank 0 reports the global figures); never dropped
  expert_load = 9,
};

// weight_gradient: W, a backward's weight gradients run apart from its B (zero-bubble pipeline schedules).
enum class ComputeKind : std::uint8_t { forward = 0, backward = 1, recompute = 2, optimizer = 3, weight_gradient = 4 };

enum class CommOp : std::uint8_t {
  all_reduce = 0,
  reduce_scatter = 1,
  all_gather = 2,
  broadcast = 3,
  gather = 4,
  scatter = 5,
  send = 6,
  recv = 7,
  barrier = 8,
};

// Which half of a ring all-reduce a chunk transfer belongs to.
enum class RingPhase : std::uint8_t { none = 0, reduce_scatter = 1, all_gather = 2 };

enum class ShardAction : std::uint8_t { gather = 0, release = 1 };

// The model state a data-parallel collective moves for a training step (what
// its bytes count toward: plan/data_parallel_traffic.h); evaluation: ZeRO-3's
// parameter gathers for an evaluation after the step, outside its traffic;
// other for tokens, loss totals, norms, the tied embedding's copies across
// stages and pipeline activations; tensor_parallel: the all-reduces inside a
// layer's forward and backward over its tensor-parallel group (Megatron's f
// and g, model/tensor_parallel.h), and the vocabulary-parallel loss's;
// context_parallel: the key/value blocks (and their gradients) a layer's ring
// attention passes round its cp group (model/context_parallel.h), and the
// gradients' sum over that group.
enum class CommPurpose : std::uint8_t {
  other = 0,
  gradients = 1,
  parameters = 2,
  evaluation = 3,
  tensor_parallel = 4,
  context_parallel = 5,
  expert_parallel = 6  // MoE's all-to-all dispatch and combine of routed tokens
};
inline bool moves_model_states(CommPurpose p) {
  return p == CommPurpose::gradients || p == CommPurpose::parameters;
}

enum class LogLevel : std::uint8_t { debug = 0, info = 1, warning = 2, error = 3 };

inline constexpr std::size_t kEventTextSize = 120;

struct Event {
  EventKind kind = EventKind::log;
  std::int32_t rank = 0;           // global rank that emitted it
  std::int32_t stage = 0;          // pipeline stage of that rank
  std::int64_t step = 0;           // optimizer step (from 1 while training; 0 before)
  std::int32_t micro_batch = -1;   // micro-batch (pipeline or accumulation), -1 if none
  std::int64_t start_ns = 0;       // monotonic, since the run started
  std::int64_t end_ns = 0;         // == start_ns for instantaneous events

  // compute_span
  ComputeKind compute = ComputeKind::forward;
  std::int32_t layer = -1;         // layer index, or -1 for a whole stage

  // comm_span
  CommOp op = CommOp::all_reduce;
  RingPhase phase = RingPhase::none;
  std::int32_t bucket = -1;        // DDP gradient bucket, -1 if none
  std::int32_t unit = -1;          // comm_span / shard: the ZeRO unit (0 embeddings, 1 + l layer l, L + 1 head), -1 if none
  std::int32_t ring_step = -1;     // 0 .. N-2 within its phase
  std::int32_t chunk = -1;         // chunk index being moved
  std::int32_t src = -1;           // sending rank (global)
  std::int32_t dst = -1;           // receiving rank (global)
  std::int64_t bytes = 0;          // payload of this transfer (comm) or shard bytes (shard)
  CommPurpose purpose = CommPurpose::other;  // comm_span: the model state it moves, if any

  // shard
  ShardAction shard_action = ShardAction::gather;

  // memory_sample: current bytes by category (MemoryBytes order), and each
  // category's peak since the run started (MemoryLedger::peak: what the
  // estimator predicts).
  std::array<std::int64_t, kMemoryCategoryCount> memory{};
  std::array<std::int64_t, kMemoryCategoryCount> memory_peak{};
  // memory_sample of a host rank: the whole process's resident memory now and
  // its peak (core/process_memory.h; every rank of the process shares it); 0: unknown.
  std::int64_t process_resident_bytes = 0;
  std::int64_t process_peak_resident_bytes = 0;
  // memory_sample of a rank on a GPU (device >= 0, its ordinal; -1: host memory):
  // the whole device as cudaMemGetInfo sees it (total - free, every process
  // counted) and what the rank's caching allocator holds (core/caching_device_memory.h).
  std::int32_t device = -1;
  std::int64_t device_used_bytes = 0;
  std::int64_t device_total_bytes = 0;
  std::int64_t device_reserved_bytes = 0;

  // step_metrics
  float loss = 0.0f;
  float lr = 0.0f;
  float grad_norm = 0.0f;
  float tokens_per_s = 0.0f;
  float eval_loss = 0.0f;
  bool has_eval_loss = false;
  // step_metrics: the loss scale this step used (1 without fp16 loss scaling), and
  // whether the step was skipped for an overflow. overflow: the scale that overflowed.
  float loss_scale = 1.0f;
  bool skipped = false;
  // step_metrics and expert_load: the step's Switch load-balancing loss, its mean over the MoE
  // layers and forwards (model/mixture_of_experts.h); 0 for a dense model.
  float aux_loss = 0.0f;

  // expert_load (with `layer`): what the router gave one expert over the step's forwards (every
  // micro-batch of every rank), and its layer's totals. Capacity is per forward,
  // ceil(capacity_factor tokens k / E), so the step's places are that times the forwards.
  std::int32_t expert = -1;
  std::int64_t expert_tokens = 0;    // choices the expert took (kept)
  std::int64_t expert_capacity = 0;  // its places over the step
  std::int64_t routed = 0;           // the layer's choices over the step (tokens x k)
  std::int64_t dropped = 0;          // of those, the choices over their expert's capacity

  // log / error: UTF-8, NUL-terminated, truncated to fit
  LogLevel level = LogLevel::info;
  std::array<char, kEventTextSize> text{};

  void set_text(std::string_view s);
  std::string_view text_view() const;
};

std::string_view event_kind_name(EventKind kind);
std::string_view compute_kind_name(ComputeKind kind);
std::string_view comm_op_name(CommOp op);
std::string_view ring_phase_name(RingPhase phase);
inline constexpr EventKind kLastEventKind = EventKind::expert_load;

// Where engine threads put events. Implementations never block on a slow
// consumer (see event_queue.h); emit may be called from any thread.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void emit(const Event& event) = 0;
};

// Nanoseconds on the steady clock, relative to a run's start.
class RunClock {
 public:
  RunClock();
  // A run whose start is `origin_ns` on the steady clock (steady_ns()): the
  // processes of one job on one machine share that clock, so their events line up.
  explicit RunClock(std::int64_t origin_ns) : origin_ns_(origin_ns) {}
  std::int64_t now_ns() const;
  static std::int64_t steady_ns();

 private:
  std::int64_t origin_ns_;
};

}  // namespace shardscope
