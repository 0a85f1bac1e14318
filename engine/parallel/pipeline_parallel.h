// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline parallelism (GPipe, Huang et al. 2019; 1F1B, Narayanan et al. 2021):
// each stage holds a contiguous block of layers and runs its list of actions
// from plan/pipeline_schedule.h, one micro-batch at a time: forward and backward on
// its own layers, activations sent to the next stage, their gradients back to
// the previous one. Every transfer is a send/recv on the pipeline group and so
// an event; every forward and backward is a compute span with its micro-batch.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "events/event.h"
#include "model/model.h"
#include "parallel/communicator.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

class DeviceClock;

// The floats a stage boundary carries for one micro-batch of B sequences of T
// tokens, as this rank holds them: the stage's output (activation) or the
// gradient sent back for it.
std::int64_t stage_boundary_floats(const Model& model, int B, int T, bool activation);

struct PipelineStageRun {
  Model& model;
  Communicator* pipeline = nullptr;  // group of the stages of this data-parallel rank; null with one stage
  int stage = 0;
  const std::vector<PipelineAction>* actions = nullptr;  // this stage's schedule
  // The data of micro-batch j; the vectors behind it live until the run ends.
  std::function<Batch(int micro_batch)> batch;
  // Called just before the backward of micro-batch j (DDP arms its reducer on
  // the last), or before its W where the schedule splits it (the weight
  // gradients are W's). The caller waits for DDP's buckets after the whole schedule:
  // the last gradient send to the previous stage must not wait for them.
  std::function<void(int micro_batch)> before_backward;
  double loss_rows = 0.0;      // each scored position weighs 1 / loss_rows (see Model::backward)
  int micro_batch_offset = 0;  // added to j in events and tags (accumulation steps before this one)
  CommTag tag;                 // step of the run
  EventSink* sink = nullptr;
  DeviceClock* clock = nullptr;  // the rank's: the spans' times (clock/device_clock.h)
  Event event_base;  // rank, stage, step
  // Whether a send and the receive after it go out as one exchange
  // (fuses_with_next). ZB-V's lists run them one by one: there both stages
  // send to each other at once, and an exchange that waits for its send to
  // be received (NCCL's; MPI's did too) would hang where the peer's own
  // exchange waits for us; plain sends are eager (in-process, MPI) and do not.
  bool fuse_transfers = true;
};

struct PipelineStageResult {
  float loss_sum = 0.0f;  // sum over the micro-batches of mean loss x scored positions (last stage only)
  double forward_s = 0.0;
  double backward_s = 0.0;  // B, or B and W together
  double weight_s = 0.0;    // W run apart (zero-bubble schedules)
};

// Runs the stage's actions in order. Each (chunk, micro-batch) holds an
// activation slot of the model from its first forward-side action to its last
// backward phase (frees_activations); the model has as many slots as the
// schedule has in flight (peak_in_flight, see Trainer), and names the key if
// the schedule asks for more. A B whose micro-batch has a W in the list runs
// the input gradient alone and the W the weight gradients (Model::backward_input,
// backward_weights); the W's spans are ComputeKind::weight_gradient. Throws
// std::logic_error for an action this runtime cannot run yet (a chunk other
// than 0), CommAborted if the world is aborted.
PipelineStageResult run_pipeline_stage(const PipelineStageRun& run);

}  // namespace shardscope
