// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/ddp.h"

#include <limits>
#include <utility>

#include "clock/device_clock.h"

namespace shardscope {

std::int64_t bucket_cap_bytes(double bucket_mb) {
  return static_cast<std::int64_t>(bucket_mb * 1024 * 1024);
}

std::vector<GradientBucket> make_gradient_buckets(const ParameterLayout& layout, std::int64_t bucket_bytes,
                                                  std::int64_t element_bytes, bool split_experts) {
  std::vector<GradientBucket> buckets;
  const auto& entries = layout.entries();
  std::int64_t end = layout.total();
  std::int64_t begin = end;
  bool experts = false;  // the open bucket's kind
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const bool expert = split_experts && it->expert;
    const std::int64_t bytes_with = (end - it->offset) * element_bytes;
    if (begin != end && (bytes_with > bucket_bytes || expert != experts)) {  // close the bucket before this parameter
      buckets.push_back({static_cast<int>(buckets.size()), begin, end, experts});
      end = begin;
    }
    experts = expert;
    begin = it->offset;
  }
  if (begin != end) buckets.push_back({static_cast<int>(buckets.size()), begin, end, experts});
  return buckets;
}

DdpReducer::DdpReducer(Communicator& comm, std::vector<GradientBucket> buckets, DeviceClock* clock,
                       Communicator* experts)
    : comm_(comm), experts_(experts), buckets_(std::move(buckets)), clock_(clock) {}

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
    ready_times_.clear();
    error_ = nullptr;
  }
  thread_ = std::thread([this, grads, dtype, tag] { run(grads, dtype, tag); });
}

void DdpReducer::gradients_ready(std::int64_t frontier) {
  const std::int64_t now = clock_ != nullptr ? clock_->now() : 0;  // on the backward's thread: its compute stream
  {
    std::lock_guard lock(mutex_);
    if (frontier < frontier_) {
      frontier_ = frontier;
      ready_times_.emplace_back(frontier, now);
    }
  }
  ready_.notify_one();
}

std::int64_t DdpReducer::ready_time(std::int64_t begin) const {
  for (const auto& [frontier, time] : ready_times_)
    if (frontier <= begin) return time;
  return 0;
}

void DdpReducer::run(void* grads, DType dtype, CommTag tag) {
  auto* base = static_cast<std::byte*>(grads);
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  const DeviceClock::CommStream stream(clock_);  // this thread is the rank's communication stream
  try {
    for (const GradientBucket& bucket : buckets_) {
      // An expert bucket's peers are the ranks holding the same experts (none: nothing to average).
      Communicator* over = bucket.experts ? experts_ : &comm_;
      if (over == nullptr || over->size() == 1) continue;
      std::int64_t ready = 0;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return frontier_ <= bucket.begin; });
        ready = ready_time(bucket.begin);
      }
      if (clock_ != nullptr) clock_->comm_stream_wait_until(ready);
      tag.bucket = bucket.index;
      tag.purpose = CommPurpose::gradients;
      over->all_reduce(base + bucket.begin * esize, bucket.end - bucket.begin, dtype, ReduceOp::average, tag);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  }
}

void DdpReducer::finish() {
  gradients_ready(0);
  // Waiting for the communication thread is waiting on the peers: the compute
  // slot goes meanwhile (clock/device_clock.h), as in a communication call.
  const std::int64_t now = clock_ != nullptr ? clock_->comm_begin() : 0;
  if (thread_.joinable()) thread_.join();
  if (clock_ != nullptr) {
    clock_->comm_end(now);
    clock_->compute_wait_for_comm();
  }
  std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace shardscope
