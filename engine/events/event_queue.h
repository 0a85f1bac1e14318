// SPDX-License-Identifier: GPL-3.0-or-later
// How engine events reach the GUI: a bounded multi-producer single-consumer
// ring. Engine threads emit; one consumer (the GUI's poll timer, the recorder
// thread) drains. A producer never waits for the consumer: when the ring is
// full, fine-grained spans are dropped and counted, and events that must never
// be lost (step metrics, logs, errors) go to a small mutex-guarded overflow list.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "events/event.h"

namespace shardscope {

// compute_span, comm_span, shard and memory_sample may be dropped under
// pressure; step_metrics, expert_load, log and error never are.
bool event_is_droppable(EventKind kind);

inline constexpr std::size_t kEventKindCount = 7;

// Ordering guarantee: the events one producer thread emits come out of drain()
// in the order that thread emitted them (minus the dropped ones). Events of
// different threads interleave in no promised order; sort by start_ns if a
// view needs time order.
//
// How the guarantee holds with two paths (ring and overflow list):
//  - once anything is in the overflow list, every producer sends its undroppable
//    events to the overflow list too and drops its droppable ones, so nothing
//    emitted later can overtake an overflowed event through the ring;
//  - the consumer moves the overflow list out only while the ring is truly
//    empty (every claimed slot consumed), so everything emitted before an
//    overflowed event has already been delivered; the moved-out events are
//    delivered before anything else.
//
// Progress: producers never wait for the consumer (a full ring means drop or
// overflow). The overflow list takes a mutex the consumer holds only to swap
// the list out. The consumer can be held up by a producer that has claimed a
// slot and is descheduled before filling it (Vyukov's ring is not lock-free for
// the consumer): drain() then returns what it has and the event comes next time.
class EventQueue final : public EventSink {
 public:
  // capacity is rounded up to a power of two (at least 2). One slot holds an
  // Event (~300 bytes), so the default is about 19 MiB.
  explicit EventQueue(std::size_t capacity = 65536);
  ~EventQueue() override;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Any thread. Never blocks on the consumer.
  void emit(const Event& event) override;

  // Consumer only (one thread at a time). Appends at most max_events events to
  // out and returns how many it appended.
  std::size_t drain(std::vector<Event>& out, std::size_t max_events);

  // Any thread. Droppable events dropped so far, in total or of one kind.
  std::uint64_t dropped() const;
  std::uint64_t dropped(EventKind kind) const;
  // Undroppable events that went through the overflow list (a sign the
  // consumer is too slow or the ring too small).
  std::uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }
  std::size_t capacity() const { return mask_ + 1; }

 private:
  struct Slot {
    std::atomic<std::size_t> sequence;  // == position: free; == position + 1: holds an event
    Event event;
  };

  bool try_push_ring(const Event& event);
  bool try_pop_ring(Event& out);
  void push_overflow(const Event& event);
  bool take_overflow_if_ring_empty();

  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_;
  alignas(64) std::atomic<std::size_t> enqueue_pos_{0};  // claimed by producers (CAS)
  alignas(64) std::size_t dequeue_pos_ = 0;               // consumer only
  std::deque<Event> pending_;                              // consumer only: overflow taken, not yet delivered

  alignas(64) std::atomic<std::size_t> overflow_size_{0};  // > 0: producers must not use the ring
  std::mutex overflow_mutex_;
  std::vector<Event> overflow_;  // guarded by overflow_mutex_

  std::array<std::atomic<std::uint64_t>, kEventKindCount> dropped_{};
  std::atomic<std::uint64_t> overflowed_{0};
};

// Forwards every event to several sinks, in the order given: typically the
// queue for the GUI and a RecordingWriter, so the recording keeps every event
// even when the GUI's queue drops spans. Does not own the sinks.
class FanOutSink final : public EventSink {
 public:
  FanOutSink() = default;
  explicit FanOutSink(std::vector<EventSink*> sinks) : sinks_(std::move(sinks)) {}
  void add(EventSink* sink) { sinks_.push_back(sink); }  // before any emit
  void emit(const Event& event) override {
    for (EventSink* sink : sinks_) sink->emit(event);
  }

 private:
  std::vector<EventSink*> sinks_;
};

}  // namespace shardscope
