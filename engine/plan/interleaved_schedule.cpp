// SPDX-License-Identifier: GPL-3.0-or-later
// Interleaved 1F1B's action lists (interleaved_schedule.h).
#include "plan/interleaved_schedule.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

int warmup_forwards(int stages, int stage, int micro_batches, int virtual_stages) {
  const long long total = static_cast<long long>(virtual_stages) * micro_batches;
  if (micro_batches == stages) return static_cast<int>(total);  // Megatron: all forwards first
  const long long warmup = 2LL * (stages - stage - 1) + static_cast<long long>(virtual_stages - 1) * stages;
  return static_cast<int>(std::min(warmup, total));
}

// The k-th forward (backward: reverse chunk order) of a stage, counted over
// all v·m of them: groups of p micro-batches go through the chunks in turn.
PipelineAction nth(Type type, int stage, int stages, int virtual_stages, int k) {
  const int group = stages * virtual_stages;
  const int chunk_in_order = (k % group) / stages;
  PipelineAction a{type, (k / group) * stages + k % stages, -1, stage};
  a.chunk = type == Type::forward ? chunk_in_order : virtual_stages - 1 - chunk_in_order;
  return a;
}

// Stage s's computations, in order (interleaved_schedule.h), and where the
// steady rounds begin and end in that list.
struct ComputeList {
  std::vector<PipelineAction> actions;
  int steady_begin = 0, steady_end = 0;
};

ComputeList compute_list(int stage, int stages, int micro_batches, int virtual_stages) {
  const int total = virtual_stages * micro_batches;
  const int warmup = warmup_forwards(stages, stage, micro_batches, virtual_stages);
  ComputeList list;
  for (int k = 0; k < warmup; ++k) list.actions.push_back(nth(Type::forward, stage, stages, virtual_stages, k));
  list.steady_begin = warmup;
  for (int k = 0; k < total - warmup; ++k) {
    list.actions.push_back(nth(Type::forward, stage, stages, virtual_stages, warmup + k));
    list.actions.push_back(nth(Type::backward, stage, stages, virtual_stages, k));
  }
  list.steady_end = static_cast<int>(list.actions.size());
  for (int k = total - warmup; k < total; ++k)
    list.actions.push_back(nth(Type::backward, stage, stages, virtual_stages, k));
  return list;
}

// The transfers of compute action `a`: the receive of its input and the send
// of its output (a forward's activations, a backward's input gradient).
std::optional<PipelineAction> receive_of(const PipelineAction& a, int stages, int chunks) {
  const bool forward = a.type == Type::forward;
  const std::optional<int> peer =
      forward ? previous_stage_of(a.stage, a.chunk, stages) : next_stage_of(a.stage, a.chunk, stages, chunks);
  if (!peer) return std::nullopt;
  PipelineAction r{forward ? Type::recv_activation : Type::recv_gradient, a.micro_batch, *peer, a.stage};
  r.chunk = a.chunk;
  return r;
}
std::optional<PipelineAction> send_of(const PipelineAction& a, int stages, int chunks) {
  const bool forward = a.type == Type::forward;
  const std::optional<int> peer =
      forward ? next_stage_of(a.stage, a.chunk, stages, chunks) : previous_stage_of(a.stage, a.chunk, stages);
  if (!peer) return std::nullopt;
  PipelineAction s{forward ? Type::send_activation : Type::send_gradient, a.micro_batch, *peer, a.stage};
  s.chunk = a.chunk;
  return s;
}

// Megatron's groups: one after every computation but a steady round's F
// (its send waits for the round's B). groups[i + 1] follows computation i,
// groups[0] precedes the first; each holds the sends of the computations
// since the last group, then the receives of those up to the next one.
std::vector<PipelineAction> with_grouped_transfers(const ComputeList& list, int stages, int chunks) {
  const auto n = static_cast<int>(list.actions.size());
  const auto group_after = [&](int i) {  // the group the output of computation i leaves in
    const bool steady_forward = i >= list.steady_begin && i < list.steady_end && (i - list.steady_begin) % 2 == 0;
    return steady_forward ? i + 2 : i + 1;
  };
  std::vector<std::vector<PipelineAction>> sends(static_cast<std::size_t>(n) + 1), receives(sends.size());
  for (int i = 0; i < n; ++i) {
    const PipelineAction& a = list.actions[static_cast<std::size_t>(i)];
    if (auto s = send_of(a, stages, chunks)) sends[static_cast<std::size_t>(group_after(i))].push_back(*s);
    // Its input comes in the last group before it: the one before a steady round's F covers its B too.
    const bool steady_backward = i > list.steady_begin && i < list.steady_end && (i - list.steady_begin) % 2 == 1;
    if (auto r = receive_of(a, stages, chunks))
      receives[static_cast<std::size_t>(steady_backward ? i - 1 : i)].push_back(*r);
  }
  std::vector<PipelineAction> result;
  for (int g = 0; g <= n; ++g) {
    const auto k = static_cast<std::size_t>(g);
    result.insert(result.end(), sends[k].begin(), sends[k].end());
    result.insert(result.end(), receives[k].begin(), receives[k].end());
    if (g < n) result.push_back(list.actions[k]);
  }
  return result;
}

}  // namespace

std::optional<int> previous_stage_of(int stage, int chunk, int stages) {
  if (stage > 0) return stage - 1;
  if (chunk > 0) return stages - 1;
  return std::nullopt;
}

std::optional<int> next_stage_of(int stage, int chunk, int stages, int chunks) {
  if (stage < stages - 1) return stage + 1;
  if (chunk < chunks - 1) return 0;
  return std::nullopt;
}

void check_interleaved_shape(int stages, int micro_batches, int virtual_stages) {
  if (virtual_stages < 2)
    throw ConfigError("--schedule interleaved-1f1b needs --virtual-stages 2 or more (got " +
                      std::to_string(virtual_stages) + "; one chunk per stage is --schedule 1f1b)");
  if (stages < 2)
    throw ConfigError("--schedule interleaved-1f1b needs --pp 2 or more (got " + std::to_string(stages) + ")");
  if (micro_batches % stages != 0)
    throw ConfigError("--schedule interleaved-1f1b needs --micro-batches a multiple of --pp (got " +
                      std::to_string(micro_batches) + " and " + std::to_string(stages) +
                      "): Megatron's interleaving sends the micro-batches round the stages in groups of p");
}

PipelineSchedule interleaved_schedule(int stages, int micro_batches, int virtual_stages) {
  check_interleaved_shape(stages, micro_batches, virtual_stages);
  PipelineSchedule schedule;
  for (int s = 0; s < stages; ++s)
    schedule.push_back(
        with_grouped_transfers(compute_list(s, stages, micro_batches, virtual_stages), stages, virtual_stages));
  return schedule;
}

int interleaved_peak_in_flight(int stages, int stage, int micro_batches, int virtual_stages) {
  const int warmup = warmup_forwards(stages, stage, micro_batches, virtual_stages);
  return std::min(warmup + 1, virtual_stages * micro_batches);
}

}  // namespace shardscope
