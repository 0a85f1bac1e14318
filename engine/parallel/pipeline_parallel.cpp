// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/pipeline_parallel.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "clock/device_clock.h"

namespace shardscope {

// Context parallelism: this cp rank's T / cp tokens of every sequence. Under
// sequence parallelism a gradient is this tp rank's T/t tokens of every
// sequence (model/sequence_parallel.cpp), and so is GPT's output; BERT's
// output, its gathered LayerNorm output, is whole.
std::int64_t stage_boundary_floats(const Model& model, int B, int T, bool activation) {
  const std::int64_t whole =
      static_cast<std::int64_t>(B) * (T / model.context_parallel_size()) * model.config().channels;
  const bool split = model.stage().sequence_parallel && !(activation && model.config().kind == ModelKind::bert);
  return split ? whole / model.stage().tp_size : whole;
}

namespace {
using Clock = std::chrono::steady_clock;
using Type = PipelineAction::Type;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Selects the model chunk `a` runs on (interleaved pipelines: virtual stage chunk·p + stage).
void select_chunk(Model& model, const PipelineAction& a) {
  if (a.chunk < 0 || a.chunk >= model.chunks())
    throw std::logic_error("pipeline stage " + std::to_string(a.stage) + ": " + format_pipeline_action(a) +
                           " is on model chunk " + std::to_string(a.chunk) + ", but the stage holds " +
                           std::to_string(model.chunks()));
  model.select_chunk(a.chunk);
}

// [i] whether list[i] makes weight gradients (a W, or a B not split from one)
// and is the last such action of its micro-batch: where the data-parallel hook
// goes. With several chunks a micro-batch has a backward per chunk, and DDP,
// armed on the last micro-batch, may only start once every chunk's gradients
// are final: the chunk the list runs last reports the frontiers (its backward
// reports offset 0 last, and the later chunks' gradients are done by then).
std::vector<bool> last_weight_phase(const std::vector<PipelineAction>& actions, const std::set<ActivationKey>& split) {
  std::vector<bool> last(actions.size(), false);
  std::set<int> seen;
  for (std::size_t i = actions.size(); i-- > 0;) {
    const PipelineAction& a = actions[i];
    const bool weights =
        a.type == Type::weight_gradient || (a.type == Type::backward && !split.contains(activation_key(a)));
    if (weights && seen.insert(a.micro_batch).second) last[i] = true;
  }
  return last;
}

// The keys whose backward the list splits: those with a W.
std::set<ActivationKey> split_backwards(const std::vector<PipelineAction>& actions) {
  std::set<ActivationKey> split;
  for (const PipelineAction& a : actions)
    if (a.type == Type::weight_gradient) split.insert(activation_key(a));
  return split;
}

// F, B or W of `a` in its selected slot: timed into `result`, one compute span
// for the stage. A B whose key has a W later runs the input gradient alone
// (Model::backward_input), and the data-parallel hook (before_backward) then
// waits for the W, whose weight gradients it reduces (DDP's buckets start from W).
void run_compute(const PipelineStageRun& run, const PipelineAction& a, bool split, bool hook, const Batch& batch,
                 Event span, PipelineStageResult& result) {
  Model& model = run.model;
  if (hook && run.before_backward) run.before_backward(a.micro_batch);
  // The stage's box says which model chunk ran (Event::chunk, otherwise a ring
  // transfer's): interleaved stages only, so one-chunk runs record as before.
  if (model.chunks() > 1) span.chunk = a.chunk;
  const auto t0 = Clock::now();
  span.start_ns = run.clock != nullptr ? run.clock->now() : 0;
  if (a.type == Type::forward) {
    const float loss = model.forward(batch);
    if (model.stage().head) result.loss_sum += loss * static_cast<float>(model.scored_rows());
    span.compute = ComputeKind::forward;
  } else if (a.type == Type::backward) {
    if (split)
      model.backward_input(run.loss_rows);
    else
      model.backward(run.loss_rows);
    span.compute = ComputeKind::backward;
  } else {
    model.backward_weights();
    span.compute = ComputeKind::weight_gradient;
  }
  span.end_ns = run.clock != nullptr ? run.clock->now() : 0;
  double& seconds = a.type == Type::forward    ? result.forward_s
                    : a.type == Type::backward ? result.backward_s
                                               : result.weight_s;
  seconds += seconds_since(t0);
  if (run.sink != nullptr) run.sink->emit(span);
}

// Selects the activation slot of `a`'s (chunk, micro-batch) for the actions
// that read or write the activations, opening it at the first of them (the
// recv of the stage's input, or the forward). The gradient transfers use the
// model's shared gradient scratch, no slot.
void select_slot(Model& model, const PipelineAction& a) {
  if (a.type == Type::recv_gradient || a.type == Type::send_gradient) return;
  const ActivationKey key = activation_key(a);
  if ((a.type == Type::recv_activation || a.type == Type::forward) && !model.holds_slot(key))
    model.open_slot(key);
  else
    model.use_slot(key);
}

// Whether chunk c's input is this stage's own chunk c - 1's output: the two
// sit back to back in the model (ZB-V's last stage, where the V turns), so
// the handoff between them is a copy on the stage, not a transfer.
bool follows_own_chunk(const Model& model, int c) {
  return c > 0 && model.stage().chunk(c).first_layer == model.stage().chunk(c - 1).end_layer;
}

// The V's turn: before F of chunk c (its slot selected), chunk c - 1's
// output of the same micro-batch, still held in that key's slot, becomes its input.
void hand_over_activation(Model& model, const PipelineAction& a, const Batch& batch, std::int64_t count) {
  model.select_chunk(a.chunk - 1);
  model.use_slot({a.chunk - 1, a.micro_batch});
  const float* out = model.stage_output();
  model.select_chunk(a.chunk);
  model.use_slot(activation_key(a));
  std::copy(out, out + count, model.stage_input(batch.B, batch.T));
}

std::int64_t boundary_count(const Model& model, const Batch& batch, Type type) {
  return stage_boundary_floats(model, batch.B, batch.T, type == Type::send_activation || type == Type::recv_activation);
}

// Before B of chunk c on a stage whose chunk c + 1 follows it: the gradient
// chunk c + 1's B left for this micro-batch is this B's output gradient.
void take_handed_gradient(std::map<int, std::vector<float>>& handed, Model& model, const PipelineAction& a,
                          const Batch& batch) {
  const auto it = handed.find(a.micro_batch);
  if (it == handed.end())
    throw std::logic_error("pipeline stage " + std::to_string(a.stage) + ": " + format_pipeline_action(a) +
                           " runs before the backward of chunk " + std::to_string(a.chunk + 1) +
                           " handed its gradient");
  std::copy(it->second.begin(), it->second.end(), model.output_gradient(batch.B, batch.T));
  handed.erase(it);
}

// A send and the receive after it, as one exchange (see fuses_with_next); the
// send's slot is selected, its count and tag given.
void exchange(const PipelineStageRun& run, const PipelineAction& send, const PipelineAction& receive,
              std::int64_t count, const CommTag& tag) {
  Model& model = run.model;
  const Batch batch = run.batch(receive.micro_batch);
  const std::int64_t receive_count = boundary_count(model, batch, receive.type);
  CommTag receive_tag = run.tag;
  receive_tag.micro_batch = run.micro_batch_offset + receive.micro_batch;
  const float* out = send.type == Type::send_activation ? model.stage_output() : model.input_gradient();
  // The receive's buffer belongs to its own (chunk, micro-batch)'s activation slot.
  select_chunk(model, receive);
  select_slot(model, receive);
  float* in = receive.type == Type::recv_activation ? model.stage_input(batch.B, batch.T)
                                                    : model.output_gradient(batch.B, batch.T);
  run.pipeline->send_recv(out, count, send.peer_stage, in, receive_count, receive.peer_stage, tag, receive_tag);
}
}  // namespace

PipelineStageResult run_pipeline_stage(const PipelineStageRun& run) {
  Model& model = run.model;
  PipelineStageResult result;
  const std::vector<PipelineAction>& actions = *run.actions;
  const std::vector<bool> frees = frees_activations(actions);
  const std::set<ActivationKey> split = split_backwards(actions);
  const std::vector<bool> hooks = last_weight_phase(actions, split);
  model.close_all_slots();  // an earlier step stopped mid-schedule may have left keys held
  std::vector<bool> turns;  // [c] chunk c follows the stage's own chunk c - 1 (follows_own_chunk)
  for (int c = 0; c < model.chunks(); ++c) turns.push_back(follows_own_chunk(model, c));
  // The V's turn backward: chunk c's input gradient, kept from its B until
  // chunk c - 1's B of the same micro-batch (the model's gradient scratch is
  // reused by every B in between).
  std::map<int, std::vector<float>> handed;
  for (std::size_t index = 0; index < actions.size(); ++index) {
    const PipelineAction& action = actions[index];
    select_chunk(model, action);
    const int j = action.micro_batch;
    select_slot(model, action);
    const Batch batch = run.batch(j);
    const std::int64_t count = boundary_count(model, batch, action.type);
    CommTag tag = run.tag;
    tag.micro_batch = run.micro_batch_offset + j;
    Event span = run.event_base;
    span.kind = EventKind::compute_span;
    span.micro_batch = tag.micro_batch;
    model.set_event_context(span);
    if (run.fuse_transfers && fuses_with_next(actions, index)) {
      exchange(run, action, actions[index + 1], count, tag);
      ++index;
      continue;
    }
    switch (action.type) {
      case Type::recv_activation:  // the previous stage's output is our input
        run.pipeline->recv(model.stage_input(batch.B, batch.T), count, action.peer_stage, tag);
        break;
      case Type::forward:
      case Type::backward:
      case Type::weight_gradient:
        if (action.type == Type::forward && turns[static_cast<std::size_t>(action.chunk)])
          hand_over_activation(model, action, batch, stage_boundary_floats(model, batch.B, batch.T, true));
        if (action.type == Type::backward && action.chunk + 1 < model.chunks() &&
            turns[static_cast<std::size_t>(action.chunk) + 1])
          take_handed_gradient(handed, model, action, batch);
        run_compute(run, action, split.contains(activation_key(action)), hooks[index], batch, span, result);
        if (action.type == Type::backward && turns[static_cast<std::size_t>(action.chunk)])
          handed[action.micro_batch].assign(
              model.input_gradient(), model.input_gradient() + stage_boundary_floats(model, batch.B, batch.T, false));
        break;
      case Type::send_activation:  // our output is the next stage's input
        run.pipeline->send(model.stage_output(), count, action.peer_stage, tag);
        break;
      case Type::recv_gradient:  // the gradient of our output, from the next stage
        run.pipeline->recv(model.output_gradient(batch.B, batch.T), count, action.peer_stage, tag);
        break;
      case Type::send_gradient:  // the gradient of our input, to the previous stage
        run.pipeline->send(model.input_gradient(), count, action.peer_stage, tag);
        break;
    }
    if (frees[index]) model.close_slot(activation_key(action));  // its last backward phase
  }
  model.select_chunk(0);  // evaluation and the next step start from the first chunk
  if (const std::vector<ActivationKey> held = model.activation_slot_table().held(); !held.empty())
    throw std::logic_error("pipeline stage " + std::to_string(run.stage) + ": the schedule never frees the slot of (" +
                           to_string(held.front()) + ")");
  return result;
}

}  // namespace shardscope
