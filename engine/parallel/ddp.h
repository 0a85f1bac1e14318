// SPDX-License-Identifier: GPL-3.0-or-later
// DistributedDataParallel (Li et al. 2020, "PyTorch Distributed"): gradients are
// grouped into buckets in the order backward produces them, and each bucket's
// ring all-reduce starts as soon as its last gradient is final, on a
// communication thread, while backward goes on with earlier layers (overlap).
// Buckets are views of the flat gradient buffer (PyTorch's
// gradient_as_bucket_view), so no gradient is copied. On a virtual clock
// (clock/device_clock.h) the thread is the rank's communication stream: a
// bucket starts at max(stream free, the time its last gradient became final)
// and the optimizer waits for the stream (finish).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "model/parameter_layout.h"
#include "parallel/communicator.h"

namespace shardscope {

class DeviceClock;

struct GradientBucket {
  int index;           // 0 is reduced first (the end of the layout, produced first by backward)
  std::int64_t begin;  // flat range [begin, end) of the gradient buffer
  std::int64_t end;
  bool experts = false;  // expert parameters only: averaged over the expert-data-parallel group
};

// --bucket-mb in bytes: MiB, as PyTorch DDP reads its bucket_cap_mb
// (bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024), torch/nn/parallel/distributed.py).
std::int64_t bucket_cap_bytes(double bucket_mb);

// From the end of the layout backwards, whole parameters into buckets of at
// most bucket_bytes (a larger parameter gets a bucket of its own), each
// gradient element_bytes long (4 in fp32, 2 in mixed precision). split_experts
// (expert parallelism): a bucket holds expert parameters only or none.
std::vector<GradientBucket> make_gradient_buckets(const ParameterLayout& layout, std::int64_t bucket_bytes,
                                                  std::int64_t element_bytes = 4, bool split_experts = false);

class DdpReducer {
 public:
  // clock: the rank's (null: none; the communicator then carries no virtual clock either).
  // experts: the expert-data-parallel group the expert buckets are averaged
  // over (expert parallelism; with one rank in it they stay as they are).
  DdpReducer(Communicator& comm, std::vector<GradientBucket> buckets, DeviceClock* clock = nullptr,
             Communicator* experts = nullptr);
  ~DdpReducer();
  DdpReducer(const DdpReducer&) = delete;
  DdpReducer& operator=(const DdpReducer&) = delete;

  const std::vector<GradientBucket>& buckets() const { return buckets_; }

  // Starts the communication thread for one backward pass over `grads` (flat,
  // elements of dtype: f32, or f16/bf16 in mixed precision).
  void begin(void* grads, DType dtype, const CommTag& tag);
  void begin(float* grads, const CommTag& tag) { begin(grads, DType::f32, tag); }
  // From the backward thread: every gradient at offset >= frontier is final
  // (now, on the rank's clock).
  void gradients_ready(std::int64_t frontier);
  // Waits until every bucket is averaged over the ranks (the compute stream
  // waits for the communication stream); rethrows a communication error (e.g.
  // CommAborted) from the communication thread.
  void finish();

 private:
  void run(void* grads, DType dtype, CommTag tag);
  // The clock's time when the gradients from `begin` on were first all final (the mutex held).
  std::int64_t ready_time(std::int64_t begin) const;

  Communicator& comm_;
  Communicator* experts_;
  std::vector<GradientBucket> buckets_;
  DeviceClock* const clock_;
  std::vector<std::pair<std::int64_t, std::int64_t>> ready_times_;  // (frontier, clock time), as reported
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::int64_t frontier_ = 0;
  std::exception_ptr error_;
};

}  // namespace shardscope
