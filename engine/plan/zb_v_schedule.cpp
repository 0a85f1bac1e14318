// SPDX-License-Identifier: GPL-3.0-or-later
// ZB-V's action lists (zb_v_schedule.h).
#include "plan/zb_v_schedule.h"

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

// One stage's list being written: each chunk's F, B and W counted, so every
// add takes the chunk's next micro-batch.
class VStageList {
 public:
  explicit VStageList(int stage) : stage_(stage) {}
  void forward(int chunk) { add(Type::forward, chunk, forwards_[chunk]); }
  void backward(int chunk) { add(Type::backward, chunk, backwards_[chunk]); }
  void weight(int chunk) { add(Type::weight_gradient, chunk, weights_[chunk]); }
  int forwards(int chunk) const { return forwards_[chunk]; }
  bool owes_weight(int chunk) const { return weights_[chunk] < backwards_[chunk]; }
  std::vector<PipelineAction> take() { return std::move(list_); }

 private:
  void add(Type type, int chunk, int& count) {
    PipelineAction a{type, count++, -1, stage_};
    a.chunk = chunk;
    list_.push_back(a);
  }
  int stage_;
  int forwards_[2] = {0, 0}, backwards_[2] = {0, 0}, weights_[2] = {0, 0};
  std::vector<PipelineAction> list_;
};

std::vector<PipelineAction> v_stage(int r, int p, int m) {
  VStageList s(r);
  for (int i = 0; i < 2 * (p - r) - 1; ++i) s.forward(0);  // warm-up: down the V
  for (int i = 0; i < r; ++i) s.forward(1), s.forward(0);
  for (int i = 0; i < p - r; ++i) s.forward(1), s.backward(1), s.weight(1);
  while (s.forwards(1) < m) {  // steady: one F, B and W of each chunk per round
    if (s.forwards(0) < m) s.forward(0);
    s.backward(0), s.weight(0);
    s.forward(1), s.backward(1), s.weight(1);
  }
  for (int i = 0; i < r; ++i) s.backward(0), s.backward(1);  // cool-down: the B's first, W's in the waits
  for (int i = 0; i < p - r; ++i) s.backward(0), s.weight(0);
  while (s.owes_weight(1)) s.weight(1);
  while (s.owes_weight(0)) s.weight(0);
  return s.take();
}

// A message between two stages: gradient or activation, the receiving
// chunk and the micro-batch.
using Message = std::tuple<bool, int, int>;

// The receive compute action `a` needs from another stage, if any (its input
// from the place before for F, its output gradient from the place after for B).
std::optional<PipelineAction> receive_of(const PipelineAction& a, int stages) {
  const bool forward = a.type == Type::forward;
  if (!forward && a.type != Type::backward) return std::nullopt;
  const auto peer = forward ? v_place_before(a.stage, a.chunk, stages) : v_place_after(a.stage, a.chunk, stages);
  if (!peer || peer->stage == a.stage) return std::nullopt;  // an end of the model, or the V's turn
  PipelineAction r{forward ? Type::recv_activation : Type::recv_gradient, a.micro_batch, peer->stage, a.stage};
  r.chunk = a.chunk;
  return r;
}

// The send of what `a` made for another stage, if any, and the message the receiver reads.
std::optional<std::pair<PipelineAction, Message>> send_of(const PipelineAction& a, int stages) {
  const bool forward = a.type == Type::forward;
  if (!forward && a.type != Type::backward) return std::nullopt;
  const auto peer = forward ? v_place_after(a.stage, a.chunk, stages) : v_place_before(a.stage, a.chunk, stages);
  if (!peer || peer->stage == a.stage) return std::nullopt;
  PipelineAction t{forward ? Type::send_activation : Type::send_gradient, a.micro_batch, peer->stage, a.stage};
  t.chunk = a.chunk;
  return std::pair{t, Message{!forward, peer->chunk, a.micro_batch}};
}

// Every receive sits just before its computation. Point-to-point channels
// deliver in order, so each stage posts its sends to a peer in the order the
// peer receives them: a send waits for the ones the peer reads first. In
// the V's warm-up stage s runs more forwards of chunk 0 than stage s + 1
// has read before its first backward of chunk 1, so some activations wait
// for a gradient; a gradient never waits (the model's gradient scratch is
// reused by the next B), which throws std::logic_error if a list breaks it.
std::vector<PipelineAction> stage_with_transfers(const std::vector<std::vector<PipelineAction>>& compute, int stage,
                                                 int stages) {
  std::map<int, std::vector<Message>> order;  // [peer] what the peer receives from this stage, in its order
  for (const auto& list : compute)
    for (const PipelineAction& a : list)
      if (const auto r = receive_of(a, stages); r && r->peer_stage == stage)
        order[a.stage].push_back({r->type == Type::recv_gradient, a.chunk, a.micro_batch});
  std::map<int, std::map<Message, PipelineAction>> ready;  // [peer] made, not yet sent
  std::map<int, std::size_t> sent;                         // [peer] how many of order[peer] went
  std::vector<PipelineAction> list;
  for (const PipelineAction& a : compute[static_cast<std::size_t>(stage)]) {
    if (const auto r = receive_of(a, stages)) list.push_back(*r);
    list.push_back(a);
    const auto made = send_of(a, stages);
    if (!made) continue;
    const int peer = made->first.peer_stage;
    ready[peer].emplace(made->second, made->first);
    const std::vector<Message>& want = order[peer];
    for (std::size_t& k = sent[peer]; k < want.size() && ready[peer].contains(want[k]); ++k) {
      list.push_back(ready[peer].at(want[k]));
      ready[peer].erase(want[k]);
    }
    if (made->first.type == Type::send_gradient && ready[peer].contains(made->second))
      throw std::logic_error("zb-v stage " + std::to_string(stage) + ": the gradient of " + format_pipeline_action(a) +
                             " would wait for an earlier message to stage " + std::to_string(peer));
  }
  return list;
}

}  // namespace

std::optional<VPlace> v_place_before(int stage, int chunk, int stages) {
  if (chunk == 0) return stage > 0 ? std::optional<VPlace>(VPlace{stage - 1, 0}) : std::nullopt;
  return stage < stages - 1 ? VPlace{stage + 1, 1} : VPlace{stage, 0};  // the last stage turns the V
}

std::optional<VPlace> v_place_after(int stage, int chunk, int stages) {
  if (chunk == 1) return stage > 0 ? std::optional<VPlace>(VPlace{stage - 1, 1}) : std::nullopt;
  return stage < stages - 1 ? VPlace{stage + 1, 0} : VPlace{stage, 1};
}

void check_zb_v_shape(int stages, int micro_batches) {
  if (stages < 2) throw ConfigError("--schedule zb-v needs --pp 2 or more (got " + std::to_string(stages) + ")");
  if (micro_batches < 2 * stages - 1)
    throw ConfigError(
        "--schedule zb-v needs --micro-batches at least 2 x --pp - 1 = " + std::to_string(2 * stages - 1) + " (got " +
        std::to_string(micro_batches) + " with --pp " + std::to_string(stages) +
        "): stage 0 runs 2p - 1 forwards down the V before the first " + "micro-batch comes back up to it");
}

StageLayers zb_v_stage_layers(const ModelConfig& config, int stages, int stage) {
  const int k = stages > 0 ? config.layers / (2 * stages) : 0;
  if (k == 0 || config.layers % (2 * stages) != 0)
    throw ConfigError("--schedule zb-v: " + config.name + "'s " + std::to_string(config.layers) +
                      " layers do not split into 2 x --pp " + std::to_string(stages) + " = " +
                      std::to_string(2 * stages) + " equal chunks");
  StageLayers s{stage * k, stage * k + k, stage == 0, stage == 0};
  s.chunks = 2;
  s.chunk_stride = (2 * stages - 1 - 2 * stage) * k;
  return s;
}

std::vector<std::vector<PipelineAction>> zb_v_compute_lists(int stages, int micro_batches) {
  check_zb_v_shape(stages, micro_batches);
  std::vector<std::vector<PipelineAction>> lists;
  for (int r = 0; r < stages; ++r) lists.push_back(v_stage(r, stages, micro_batches));
  return lists;
}

PipelineSchedule with_v_transfers(const std::vector<std::vector<PipelineAction>>& compute) {
  const int stages = static_cast<int>(compute.size());
  PipelineSchedule schedule;
  for (int s = 0; s < stages; ++s) schedule.push_back(stage_with_transfers(compute, s, stages));
  return schedule;
}

PipelineSchedule zb_v_schedule(int stages, int micro_batches) {
  return with_v_transfers(zb_v_compute_lists(stages, micro_batches));
}

}  // namespace shardscope
