// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/ddp.h"

#include <limits>
#include <utility>

namespace shardscope {

std::vector<GradientBucket> make_gradient_buckets(const ParameterLayout& layout, std::int64_t bucket_bytes,
                                                  std::int64_t element_bytes) {
  std::vector<GradientBucket> buckets;
  const auto& entries = layout.entries();
  std::int64_t end = layout.total();
  std::int64_t begin = end;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const std::int64_t bytes_with = (end - it->offset) * element_bytes;
    if (begin != end && bytes_with > bucket_bytes) {  // close the bucket before this parameter
      buckets.push_back({static_cast<int>(buckets.size()), begin, end});
      end = begin;
    }
    begin = it->offset;
  }
  if (begin != end) buckets.push_back({static_cast<int>(buckets.size()), begin, end});
  return buckets;
}

DdpReducer::DdpReducer(Communicator& comm, std::vector<GradientBucket> buckets)
    : comm_(comm), buckets_(std::move(buckets)) {}

DdpReducer::~DdpReducer() {
  if (thread_.joinable()) {
    gradients_ready(0);
    thread_.join();
  }
}

void DdpReducer::begin(void* grads, DType dtype, const CommTag& tag) {
  {
    std::lock_guard lock(mutex_);
    frontier_ = std::numeric_limits<std::int64_t>::max();
    error_ = nullptr;
  }
  thread_ = std::thread([this, grads, dtype, tag] { run(grads, dtype, tag); });
}

void DdpReducer::gradients_ready(std::int64_t frontier) {
  {
    std::lock_guard lock(mutex_);
    if (frontier < frontier_) frontier_ = frontier;
  }
  ready_.notify_one();
}

void DdpReducer::run(void* grads, DType dtype, CommTag tag) {
  auto* base = static_cast<std::byte*>(grads);
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  try {
    for (const GradientBucket& bucket : buckets_) {
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return frontier_ <= bucket.begin; });
      }
      tag.bucket = bucket.index;
      comm_.all_reduce(base + bucket.begin * esize, bucket.end - bucket.begin, dtype, ReduceOp::average, tag);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  }
}

void DdpReducer::finish() {
  gradients_ready(0);
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace shardscope
