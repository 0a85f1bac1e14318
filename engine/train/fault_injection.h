// SPDX-License-Identifier: GPL-3.0-or-later
// Test hooks, kept out of the training step: a rank that fails at a step
// (--inject-failure RANK:STEP, to check that a failing rank stops every rank)
// and an fp16 overflow on a rank at a step (--inject-overflow RANK:STEP, to
// check that every rank skips the step). Off unless the run config asks.
// And a save killed mid-commit: with SHARDSCOPE_KILL_BEFORE_COMMIT=STEP in
// the environment, the process that commits step STEP's checkpoint (rank 0)
// kills itself (SIGKILL) once every rank file is written, before the manifest
// and the rename: the torn save must never be resumed from. And a rank that
// dies: with SHARDSCOPE_KILL_AT_STEP=RANK:STEP the process running RANK kills
// itself (SIGKILL, as kill -9) before the backward of STEP, in a job's first
// run only (launch --max-restarts sets SHARDSCOPE_RESTART_COUNT in the others).
// And a slow save, as a slow disk makes one: with SHARDSCOPE_SLOW_SAVE=RANK:STEP:MS
// the thread or process writing RANK's file of step STEP's save sleeps MS
// milliseconds first, so a failure can be injected while that save is in flight.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"
#include "core/dtype.h"
#include "ops/backend.h"

namespace shardscope {

class FaultInjection {
 public:
  explicit FaultInjection(const RunConfig& config)
      : fail_rank_(config.fail_rank),
        fail_step_(config.fail_step),
        overflow_rank_(config.overflow_rank),
        overflow_step_(config.overflow_step) {}

  // Throws the injected failure on `rank` at `step` (called before its backward);
  // SHARDSCOPE_KILL_AT_STEP kills the process there.
  void before_backward(int rank, std::int64_t step) const;
  // Writes an inf into the first of the rank's `count` 16-bit gradients at
  // `step`, as if its shard had overflowed; true if it did.
  bool overflow(Backend& backend, int rank, std::int64_t step, DType dtype, std::uint16_t* gradients,
                std::int64_t count) const;
  // SHARDSCOPE_KILL_BEFORE_COMMIT: called before a save of `step` writes its manifest.
  void before_checkpoint_commit(std::int64_t step) const;
  // SHARDSCOPE_SLOW_SAVE: called before `rank`'s file of a save of `step` is written.
  void before_checkpoint_write(int rank, std::int64_t step) const;

 private:
  int fail_rank_;
  std::int64_t fail_step_;
  int overflow_rank_;
  std::int64_t overflow_step_;
};

}  // namespace shardscope
