// SPDX-License-Identifier: GPL-3.0-or-later
// What one rank owns (private to the trainer's sources and its strategies:
// trainer.cpp builds the ranks and runs them; rank_step.cpp is one rank's
// optimizer step).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "clock/device_clock.h"
#include "core/buffer.h"
#include "core/memory_ledger.h"
#include "model/model.h"
#include "ops/backend.h"
#include "ops/op_profile.h"
#include "parallel/communicator.h"
#include "parallel/context_parallel.h"
#include "parallel/expert_parallel.h"
#include "parallel/in_process_communicator.h"
#include "parallel/tensor_parallel.h"
#include "parallel/zero.h"
#include "parallel/zero_storage.h"
#include "plan/pipeline_schedule.h"
#include "plan/sharding_plan.h"
#include "train/adamw.h"
#include "train/loss_scaler.h"
#include "train/strategy/strategy.h"
#include "train/trainer.h"

namespace shardscope {

struct Trainer::Rank {
  int rank = 0, dp_rank = 0, stage = 0, tp_rank = 0;
  std::unique_ptr<DeviceMemory> device_memory;  // a GPU's (before the ledger: it outlives every buffer)
  std::unique_ptr<DeviceClock> clock;           // the times of its events (virtual, or the wall clock)
  MemoryLedger ledger;
  std::unique_ptr<OpProfile> op_profile;  // RunConfig::profile_ops: the backend below times into it
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Backend> comm_backend;  // ranks sharing a device: the collectives' copies and sums
  CommDevice comm_device;                 // compute, backend, memory set when the rank's buffers are device memory
  void* cuda_stream = nullptr;            // the compute backend's stream, for NCCL
  std::unique_ptr<Model> model;
  std::unique_ptr<AdamW> optimizer;  // null on the replicas of naive DataParallel
  // One communicator per distinct group of ranks; the roles below may share one
  // (with pp = 1 the data-parallel group is the whole world).
  std::map<std::vector<int>, std::unique_ptr<Communicator>> groups;
  Communicator* dp_comm = nullptr;         // the data-parallel peers of this stage
  Communicator* pp_comm = nullptr;         // the stages of this data-parallel rank (pp > 1)
  Communicator* embedding_comm = nullptr;  // first and last stage: the tied embedding's copies
  Communicator* world_comm = nullptr;      // everyone: loss and evaluation totals
  Communicator* tp_comm = nullptr;         // the tensor-parallel peers of this (stage, dp rank) (tp > 1)
  std::unique_ptr<TensorParallelGroup> tp_group;  // the model's view of tp_comm
  Communicator* cp_comm = nullptr;                // the context-parallel peers (cp > 1)
  std::unique_ptr<ContextParallelGroup> cp_group;  // the model's view of cp_comm
  std::unique_ptr<ExpertParallelGroup> ep_group;  // the MoE layers' expert-parallel peers (--ep > 1)
  Communicator* ep_comm = nullptr;                // ep_group's communicator (--ep > 1)
  Communicator* expert_dp_comm = nullptr;         // the dp ranks holding this rank's experts (--ep > 1)
  // Makes this rank's communicator for a group (in-process, or NCCL with one GPU per rank).
  std::function<std::unique_ptr<Communicator>(const std::vector<int>& members)> make_communicator;
  Communicator* group(const std::vector<int>& members) {
    auto& slot = groups[members];
    if (!slot) slot = make_communicator(members);
    return slot.get();
  }
  // How it shares the work with its data-parallel peers (DDP's reducer, the
  // gather buffers of naive DataParallel and ZeRO-1 live in it).
  std::unique_ptr<DataParallelStrategy> strategy;
  // The unit-by-unit storage of the model states: ZeRO-2/3 shards, and the
  // 16-bit parameters and gradients of mixed precision at any stage; null otherwise.
  std::unique_ptr<ZeroShardedStorage> unit_storage;
  std::unique_ptr<DynamicLossScaler> scaler;  // every rank keeps its own; all get the same overflow verdict
  DType dtype = DType::f32;                   // parameters and gradients (f16/bf16: mixed precision)
  std::vector<PipelineAction> actions;        // this stage's schedule
  // Filled by rank_step:
  float loss_sum = 0.0f;
  std::int64_t global_scored = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0, grad_norm = 0;
  float lr = 0;
  float loss_scale = 1.0f;  // the scale this step used
  bool skipped = false;     // fp16 overflow somewhere: no update on any rank
};

namespace trainer_detail {
using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace trainer_detail

}  // namespace shardscope
