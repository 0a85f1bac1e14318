// SPDX-License-Identifier: GPL-3.0-or-later
// The MPSC event queue under pressure: capacity, an exact drop count with one
// thread, nothing undroppable lost and per-producer order with four producers
// paused at random points, and the fan-out to every sink.
#include <QTest>
#undef emit  // Qt's keyword macro (absent under QT_NO_KEYWORDS) would eat EventSink::emit

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include "events/event_queue.h"

using namespace shardscope;

namespace {

Event make(EventKind kind, std::int64_t step) {
  Event e;
  e.kind = kind;
  e.step = step;
  return e;
}

}  // namespace

class TestEventQueue : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void queue_rounds_capacity_to_a_power_of_two();
  void queue_full_ring_drops_spans_and_overflows_metrics_in_order();
  void queue_many_producers_lose_nothing_undroppable();
  void fan_out_reaches_every_sink();
};

void TestEventQueue::queue_rounds_capacity_to_a_power_of_two() {
  QCOMPARE(EventQueue(5).capacity(), std::size_t{8});
  QCOMPARE(EventQueue(0).capacity(), std::size_t{2});
  QCOMPARE(EventQueue(16).capacity(), std::size_t{16});
}

// One thread, so the outcome is exact: the ring holds 4; after that spans are
// dropped and metrics/logs/errors wait in the overflow list, and while that
// list is non-empty a later span is dropped even if the ring has room (else it
// could overtake the overflowed events).
void TestEventQueue::queue_full_ring_drops_spans_and_overflows_metrics_in_order() {
  EventQueue queue(4);
  queue.emit(make(EventKind::compute_span, 0));
  queue.emit(make(EventKind::step_metrics, 1));
  queue.emit(make(EventKind::comm_span, 2));
  queue.emit(make(EventKind::memory_sample, 3));  // ring full now
  queue.emit(make(EventKind::log, 4));            // -> overflow
  queue.emit(make(EventKind::shard, 5));          // dropped
  std::vector<Event> out;
  QCOMPARE(queue.drain(out, 2), std::size_t{2});
  queue.emit(make(EventKind::compute_span, 6));  // ring has room, but overflow is pending: dropped
  queue.emit(make(EventKind::error, 7));         // -> overflow, behind 4
  QCOMPARE(queue.drain(out, 100), std::size_t{4});
  queue.emit(make(EventKind::compute_span, 8));  // overflow empty again: the ring
  QCOMPARE(queue.drain(out, 100), std::size_t{1});
  QCOMPARE(queue.drain(out, 100), std::size_t{0});
  std::vector<std::int64_t> steps;
  for (const Event& e : out) steps.push_back(e.step);
  QCOMPARE(steps, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 7, 8}));
  QCOMPARE(queue.dropped(), std::uint64_t{2});
  QCOMPARE(queue.dropped(EventKind::shard), std::uint64_t{1});
  QCOMPARE(queue.dropped(EventKind::compute_span), std::uint64_t{1});
  QCOMPARE(queue.dropped(EventKind::step_metrics), std::uint64_t{0});
  QCOMPARE(queue.overflowed(), std::uint64_t{2});
}

// Pauses a thread wherever the signal lands, e.g. between claiming a ring slot
// and filling it, the case where a careless consumer lets a later overflowed
// event overtake an earlier ring event of the same producer.
extern "C" void pause_this_thread(int) {
  timespec pause{0, 200'000};
  nanosleep(&pause, nullptr);
}

// One round: four producers share a ring of 8 while a fifth thread keeps
// pausing them at random points. First the consumer waits until the ring has
// overflowed and dropped (both paths used), then it drains as fast as it can;
// a producer paused after claiming a slot then stalls it while the others
// overflow. Producer p's event i carries (rank p, step i) and redundant copies
// in other fields, so a torn copy through the ring would show.
void stress_queue_once() {
  constexpr int kProducers = 4, kPerProducer = 50000;
  constexpr EventKind kPattern[8] = {EventKind::step_metrics, EventKind::compute_span, EventKind::comm_span,
                                     EventKind::log,          EventKind::shard,        EventKind::memory_sample,
                                     EventKind::error,        EventKind::compute_span};
  EventQueue queue(8);
  std::atomic<int> finished{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&, p] {
      volatile int busy = 0;
      for (int i = 0; i < kPerProducer; ++i) {
        Event e = make(kPattern[i % 8], i);
        e.rank = p;
        e.bytes = std::int64_t{i} * 7 + p;
        e.memory[5] = i;
        e.set_text(std::to_string(p) + ":" + std::to_string(i));
        queue.emit(e);
        for (int work = 0; work < 300; ++work) busy = busy + 1;  // the engine's work between events
      }
      finished.fetch_add(1);
    });
  std::thread pauser([&] {
    while (finished.load() < kProducers) {
      for (auto& t : producers) pthread_kill(t.native_handle(), SIGUSR1);  // not joined yet: handles valid
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  std::vector<Event> out;
  while ((queue.overflowed() == 0 || queue.dropped() == 0) && finished.load() < kProducers) std::this_thread::yield();
  while (finished.load() < kProducers) queue.drain(out, 64);
  pauser.join();
  for (auto& t : producers) t.join();
  while (queue.drain(out, 1000) > 0) {
  }

  QVERIFY(queue.overflowed() > 0);
  QVERIFY(queue.dropped() > 0);
  std::vector<int> last(kProducers, -1);
  std::vector<std::vector<int>> seen(kProducers, std::vector<int>(kPerProducer, 0));
  std::array<std::uint64_t, kEventKindCount> delivered{};
  for (const Event& e : out) {
    QVERIFY(e.rank >= 0 && e.rank < kProducers);
    const int i = static_cast<int>(e.step);
    QCOMPARE(e.kind, kPattern[i % 8]);
    QCOMPARE(e.bytes, std::int64_t{i} * 7 + e.rank);
    QCOMPARE(e.memory[5], std::int64_t{i});
    QCOMPARE(std::string(e.text_view()), std::to_string(e.rank) + ":" + std::to_string(i));
    QVERIFY2(i > last[e.rank], "per-producer order broken");
    last[e.rank] = i;
    ++seen[e.rank][i];
    ++delivered[static_cast<std::size_t>(e.kind)];
  }
  for (int p = 0; p < kProducers; ++p)
    for (int i = 0; i < kPerProducer; ++i)
      if (!event_is_droppable(kPattern[i % 8])) QCOMPARE(seen[p][i], 1);  // exactly once
  for (std::size_t k = 0; k < kEventKindCount; ++k) {
    std::uint64_t produced = 0;
    for (int i = 0; i < kPerProducer; ++i) produced += static_cast<std::size_t>(kPattern[i % 8]) == k;
    produced *= kProducers;
    QCOMPARE(delivered[k] + queue.dropped(static_cast<EventKind>(k)), produced);
  }
}

// Several rounds, because the interleavings that break a careless queue come
// by chance (a broken take-overflow check failed about half the rounds).
void TestEventQueue::queue_many_producers_lose_nothing_undroppable() {
  struct sigaction pause_action {
  }, previous_action{};
  pause_action.sa_handler = pause_this_thread;
  sigemptyset(&pause_action.sa_mask);
  pause_action.sa_flags = SA_RESTART;
  QCOMPARE(sigaction(SIGUSR1, &pause_action, &previous_action), 0);
  for (int round = 0; round < 10 && !QTest::currentTestFailed(); ++round) stress_queue_once();
  sigaction(SIGUSR1, &previous_action, nullptr);
}

void TestEventQueue::fan_out_reaches_every_sink() {
  struct Collect : EventSink {
    std::vector<Event> events;
    void emit(const Event& e) override { events.push_back(e); }
  } collect;
  EventQueue queue(4);
  FanOutSink fan({&queue, &collect});
  for (int i = 0; i < 6; ++i) fan.emit(make(EventKind::comm_span, i));
  std::vector<Event> out;
  queue.drain(out, 100);
  QCOMPARE(out.size(), std::size_t{4});             // the queue drops...
  QCOMPARE(collect.events.size(), std::size_t{6});  // ...the other sink still gets all
}

QTEST_GUILESS_MAIN(TestEventQueue)
#include "test_event_queue.moc"
