// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/pipeline_parallel.h"

#include <chrono>

#include "clock/device_clock.h"

namespace shardscope {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

PipelineStageResult run_pipeline_stage(const PipelineStageRun& run) {
  using Type = PipelineAction::Type;
  Model& model = run.model;
  PipelineStageResult result;
  const int C = model.config().channels;
  const std::vector<PipelineAction>& actions = *run.actions;
  for (std::size_t index = 0; index < actions.size(); ++index) {
    const PipelineAction& action = actions[index];
    const int j = action.micro_batch;
    model.use_slot(j % model.activation_slots());
    const Batch batch = run.batch(j);
    const std::int64_t count = static_cast<std::int64_t>(batch.B) * batch.T * C;
    CommTag tag = run.tag;
    tag.micro_batch = run.micro_batch_offset + j;
    Event span = run.event_base;
    span.kind = EventKind::compute_span;
    span.micro_batch = tag.micro_batch;
    model.set_event_context(span);
    if (fuses_with_next(actions, index)) {
      // A send and the receive after it, as one exchange (see fuses_with_next).
      const PipelineAction& next = actions[index + 1];
      const Batch next_batch = run.batch(next.micro_batch);
      const std::int64_t next_count = static_cast<std::int64_t>(next_batch.B) * next_batch.T * C;
      CommTag next_tag = run.tag;
      next_tag.micro_batch = run.micro_batch_offset + next.micro_batch;
      const float* out = action.type == Type::send_activation ? model.stage_output() : model.input_gradient();
      // The receive's buffer belongs to its own micro-batch's activation slot.
      model.use_slot(next.micro_batch % model.activation_slots());
      float* in = next.type == Type::recv_activation ? model.stage_input(next_batch.B, next_batch.T)
                                                     : model.output_gradient(next_batch.B, next_batch.T);
      model.use_slot(j % model.activation_slots());
      run.pipeline->send_recv(out, count, action.peer_stage, in, next_count, next.peer_stage, tag, next_tag);
      ++index;
      continue;
    }
    switch (action.type) {
      case Type::recv_activation:  // the previous stage's output is our input
        run.pipeline->recv(model.stage_input(batch.B, batch.T), count, action.peer_stage, tag);
        break;
      case Type::forward: {
        const auto t0 = Clock::now();
        span.start_ns = run.clock != nullptr ? run.clock->now() : 0;
        const float loss = model.forward(batch);
        if (model.stage().head) result.loss_sum += loss * static_cast<float>(model.scored_rows());
        result.forward_s += seconds_since(t0);
        span.compute = ComputeKind::forward;
        span.end_ns = run.clock != nullptr ? run.clock->now() : 0;
        if (run.sink != nullptr) run.sink->emit(span);
        break;
      }
      case Type::send_activation:  // our output is the next stage's input
        run.pipeline->send(model.stage_output(), count, action.peer_stage, tag);
        break;
      case Type::recv_gradient:  // the gradient of our output, from the next stage
        run.pipeline->recv(model.output_gradient(batch.B, batch.T), count, action.peer_stage, tag);
        break;
      case Type::backward: {
        if (run.before_backward) run.before_backward(j);
        const auto t0 = Clock::now();
        span.start_ns = run.clock != nullptr ? run.clock->now() : 0;
        model.backward(run.loss_rows);
        span.compute = ComputeKind::backward;
        span.end_ns = run.clock != nullptr ? run.clock->now() : 0;
        result.backward_s += seconds_since(t0);
        if (run.sink != nullptr) run.sink->emit(span);
        break;
      }
      case Type::send_gradient:  // the gradient of our input, to the previous stage
        run.pipeline->send(model.input_gradient(), count, action.peer_stage, tag);
        break;
    }
  }
  return result;
}

}  // namespace shardscope
