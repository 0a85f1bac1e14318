// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/device_clock.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "events/event.h"

namespace shardscope {

namespace {
// The clock whose compute stream (communication stream) the calling thread runs.
thread_local DeviceClock* t_compute_of = nullptr;
thread_local DeviceClock* t_comm_of = nullptr;

void raise_to(std::atomic<std::int64_t>& value, std::int64_t at_least) {
  if (value.load(std::memory_order_relaxed) < at_least) value.store(at_least, std::memory_order_relaxed);
}
}  // namespace

void ComputeSlots::acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [this] { return free_ > 0; });
  --free_;
}

void ComputeSlots::release() {
  {
    std::lock_guard lock(mutex_);
    ++free_;
  }
  freed_.notify_one();
}

DeviceClock::DeviceClock(ClockKind kind, const RunClock& wall, LinkModel link, int threads,
                         std::shared_ptr<ComputeSlots> slots, std::optional<GpuTimeModel> gpu)
    : kind_(kind),
      wall_(wall),
      link_(link),
      threads_(std::max(1, threads)),
      slots_(std::move(slots)),
      gpu_(kind == ClockKind::virtual_device ? std::move(gpu) : std::nullopt) {}

void DeviceClock::hold_slot(bool hold) {
  if (slots_ == nullptr || hold == holds_slot_) return;
  if (hold)
    slots_->acquire();  // blocked: no CPU time, no work
  else
    slots_->release();
  holds_slot_ = hold;
}

std::int64_t DeviceClock::work_ns() const {
  return thread_cpu_ns() + workers_.worker_ns.load(std::memory_order_relaxed);
}

std::int64_t DeviceClock::scaled(std::int64_t ns) const {
  return factor_ == 1.0 ? ns : std::llround(static_cast<double>(ns) * factor_);
}

void DeviceClock::count_work() {
  if (gpu_) return;  // the ops' modeled times are the work (add_modeled_op)
  const std::int64_t work = work_ns();
  remainder_ += work - mark_ns_;
  mark_ns_ = work;
  const std::int64_t whole = remainder_ / threads_;  // the rank's threads share its work
  remainder_ -= whole * threads_;
  compute_ns_.fetch_add(scaled(whole), std::memory_order_relaxed);
}

void DeviceClock::add_modeled_op(double flops, double bytes, int gemms) {
  if (gpu_ && t_compute_of == this)
    compute_ns_.fetch_add(scaled(gpu_->op_ns(flops, bytes, gemms)), std::memory_order_relaxed);
}

void DeviceClock::attach_compute_thread() {
  if (!is_virtual()) return;
  t_compute_of = this;
  set_cpu_time_account(&workers_);
  hold_slot(true);
  mark_ns_ = work_ns();
}

void DeviceClock::detach_compute_thread() {
  if (!is_virtual() || t_compute_of != this) return;
  count_work();
  hold_slot(false);
  t_compute_of = nullptr;
  set_cpu_time_account(nullptr);
}

std::int64_t DeviceClock::now() {
  if (!is_virtual()) return wall_.now_ns();
  if (t_comm_of == this) return comm_ns_.load(std::memory_order_relaxed);
  if (t_compute_of == this) count_work();
  return compute_ns_.load(std::memory_order_relaxed);
}

std::int64_t DeviceClock::comm_begin() {
  const std::int64_t t = now();
  if (is_virtual() && t_comm_of != this && t_compute_of == this) hold_slot(false);  // it may wait now
  return t;
}

void DeviceClock::comm_end(std::int64_t end) {
  if (!is_virtual()) return;
  if (t_comm_of == this) {
    raise_to(comm_ns_, end);
    return;
  }
  raise_to(compute_ns_, end);
  if (t_compute_of != this) return;
  hold_slot(true);
  mark_ns_ = work_ns();  // the copies inside the call are the link's time
}

DeviceClock::CommStream::CommStream(DeviceClock* clock) {
  if (clock != nullptr && clock->is_virtual()) t_comm_of = clock;
}

DeviceClock::CommStream::~CommStream() {
  t_comm_of = nullptr;
}

void DeviceClock::comm_stream_wait_until(std::int64_t t) {
  if (is_virtual()) raise_to(comm_ns_, t);
}

void DeviceClock::compute_wait_for_comm() {
  if (!is_virtual()) return;
  if (t_compute_of == this) count_work();
  raise_to(compute_ns_, comm_ns_.load(std::memory_order_relaxed));
}

}  // namespace shardscope
