// SPDX-License-Identifier: GPL-3.0-or-later
// The ring is Dmitry Vyukov's bounded MPMC queue used with one consumer: each
// slot carries a sequence number that says whether it is free for the producer
// at position p (sequence == p) or holds the event of position p (== p + 1).
// Producers claim positions with a CAS on enqueue_pos_; the consumer alone
// moves dequeue_pos_ and needs no atomic read-modify-write.
#include "events/event_queue.h"

#include <bit>
#include <cstddef>

namespace shardscope {

bool event_is_droppable(EventKind kind) {
  switch (kind) {
    case EventKind::compute_span:
    case EventKind::comm_span:
    case EventKind::shard:
    case EventKind::memory_sample:
    case EventKind::wait_span:
      return true;
    case EventKind::step_metrics:
    case EventKind::log:
    case EventKind::error:
    case EventKind::overflow:
    case EventKind::expert_load:
      return false;
  }
  return false;  // an unknown kind is kept: better an extra event than a lost error
}

EventQueue::EventQueue(std::size_t capacity) {
  const std::size_t size = std::bit_ceil(capacity < 2 ? std::size_t{2} : capacity);
  slots_ = std::make_unique<Slot[]>(size);
  for (std::size_t i = 0; i < size; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
  mask_ = size - 1;
}

EventQueue::~EventQueue() = default;

void EventQueue::emit(const Event& event) {
  // While the overflow list is non-empty nobody uses the ring, so nothing a
  // thread emits later can overtake its overflowed event (see the header).
  if (overflow_size_.load(std::memory_order_acquire) == 0 && try_push_ring(event)) return;
  if (event_is_droppable(event.kind)) {
    dropped_[static_cast<std::size_t>(event.kind)].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  push_overflow(event);
}

bool EventQueue::try_push_ring(const Event& event) {
  std::size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& slot = slots_[pos & mask_];
    const std::size_t sequence = slot.sequence.load(std::memory_order_acquire);
    const auto diff = static_cast<std::ptrdiff_t>(sequence - pos);
    if (diff == 0) {
      // The slot is free for position pos: claim it, then fill and publish.
      if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        slot.event = event;
        slot.sequence.store(pos + 1, std::memory_order_release);
        return true;
      }
      // CAS failure reloaded pos; try again.
    } else if (diff < 0) {
      return false;  // the slot still holds the event of pos - capacity: the ring is full
    } else {
      pos = enqueue_pos_.load(std::memory_order_relaxed);  // another producer took pos
    }
  }
}

bool EventQueue::try_pop_ring(Event& out) {
  Slot& slot = slots_[dequeue_pos_ & mask_];
  if (slot.sequence.load(std::memory_order_acquire) != dequeue_pos_ + 1) return false;  // empty or not yet filled
  out = slot.event;
  // Free the slot for the producer one lap ahead.
  slot.sequence.store(dequeue_pos_ + mask_ + 1, std::memory_order_release);
  ++dequeue_pos_;
  return true;
}

void EventQueue::push_overflow(const Event& event) {
  std::lock_guard lock(overflow_mutex_);
  overflow_.push_back(event);
  overflow_size_.store(overflow_.size(), std::memory_order_release);
  overflowed_.fetch_add(1, std::memory_order_relaxed);
}

bool EventQueue::take_overflow_if_ring_empty() {
  std::lock_guard lock(overflow_mutex_);
  if (overflow_.empty()) return false;
  // Every position claimed so far must be consumed: then each event a thread
  // put in the ring before it overflowed has been delivered. The mutex makes
  // those claims visible here (the producer claimed, then locked to overflow).
  if (enqueue_pos_.load(std::memory_order_acquire) != dequeue_pos_) return false;
  pending_.insert(pending_.end(), overflow_.begin(), overflow_.end());
  overflow_.clear();
  overflow_size_.store(0, std::memory_order_release);
  return true;
}

std::size_t EventQueue::drain(std::vector<Event>& out, std::size_t max_events) {
  std::size_t taken = 0;
  Event event;
  while (taken < max_events) {
    if (!pending_.empty()) {  // overflow taken earlier comes before anything in the ring now
      out.push_back(pending_.front());
      pending_.pop_front();
    } else if (try_pop_ring(event)) {
      out.push_back(event);
    } else if (overflow_size_.load(std::memory_order_acquire) == 0 || !take_overflow_if_ring_empty()) {
      break;  // nothing more now (or a producer is still filling its slot: next call)
    } else {
      continue;
    }
    ++taken;
  }
  return taken;
}

std::uint64_t EventQueue::dropped() const {
  std::uint64_t total = 0;
  for (const auto& count : dropped_) total += count.load(std::memory_order_relaxed);
  return total;
}

std::uint64_t EventQueue::dropped(EventKind kind) const {
  const auto index = static_cast<std::size_t>(kind);
  return index < kEventKindCount ? dropped_[index].load(std::memory_order_relaxed) : 0;
}

}  // namespace shardscope
