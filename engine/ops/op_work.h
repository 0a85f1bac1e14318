// SPDX-License-Identifier: GPL-3.0-or-later
// Every op of a backend with its nominal work: the FLOPs of its matmuls
// (2·M·N·K, what the op issues, e.g. attention's full T×T score matrix) and
// the bytes it must read and write at least (fp32 values: ShardScope's kernels
// compute in fp32 at every precision). An observer wraps each call: the
// profiler times it (ops/op_profile.h); the GPU-profile clock prices it on a
// modeled GPU (train/run_device_models.h).
#pragma once

#include <memory>

#include "ops/backend.h"

namespace shardscope {

struct OpCall {
  const char* op;  // "linear_forward"
  double flops;    // nominal, 0 for ops that are not matmuls
  double bytes;    // nominal minimum traffic
  void (*run_op)(void* context);
  void* context;
  int gemms = 0;  // GEMM kernels the op launches (a GPU's fixed cost per kernel, clock/kernel_model.h)
  void run() const { run_op(context); }  // the inner backend's op
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // Runs the op once (call.run()), with what the observer does around it.
  virtual void observe(Backend& inner, const OpCall& call) = 0;
};

// Wraps `inner`: every op goes through `observer`.
std::unique_ptr<Backend> make_observed_backend(std::unique_ptr<Backend> inner, std::unique_ptr<OpObserver> observer);

}  // namespace shardscope
