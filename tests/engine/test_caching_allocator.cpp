// SPDX-License-Identifier: GPL-3.0-or-later
// The caching device allocator (core/caching_device_memory.h) on the CPU,
// over a fake raw allocator that counts its calls and has a capacity: a
// repeated training-like cycle reuses blocks without raw calls, a failed raw
// allocation empties the cache and retries, and a request too big for the
// device still fails with a message that says so.
#include <QTest>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/buffer.h"
#include "core/caching_device_memory.h"
#include "core/error.h"

using namespace shardscope;

namespace {

// Host memory posing as a device of `capacity` bytes. Fills its blocks with
// 0xAB so a missing zero fill shows.
class FakeRawAllocator final : public RawDeviceAllocator {
 public:
  explicit FakeRawAllocator(std::int64_t capacity) : capacity_(capacity) {}
  void* allocate(std::int64_t bytes) override {
    const std::lock_guard lock(mutex_);
    ++allocate_calls;
    if (live_ + bytes > capacity_)
      throw std::runtime_error("fake device out of memory: " + std::to_string(bytes) + " bytes");
    live_ += bytes;
    auto* p = ::operator new(static_cast<std::size_t>(bytes));
    std::memset(p, 0xAB, static_cast<std::size_t>(bytes));
    sizes_[p] = bytes;
    return p;
  }
  void free(void* pointer) noexcept override {
    const std::lock_guard lock(mutex_);
    ++free_calls;
    live_ -= sizes_[pointer];
    sizes_.erase(pointer);
    ::operator delete(pointer);
  }
  void zero(void* pointer, std::int64_t bytes) override {
    ++zero_calls;
    std::memset(pointer, 0, static_cast<std::size_t>(bytes));
  }
  std::string name() const override { return "fake:0"; }
  bool device_usage(DeviceUsage& usage) const override {
    const std::lock_guard lock(mutex_);
    usage.device = 0;
    usage.used_bytes = live_;
    usage.total_bytes = capacity_;
    return true;
  }
  std::int64_t live() const {
    const std::lock_guard lock(mutex_);
    return live_;
  }

  std::atomic<int> allocate_calls{0}, free_calls{0}, zero_calls{0};

 private:
  mutable std::mutex mutex_;
  std::int64_t capacity_, live_ = 0;
  std::map<void*, std::int64_t> sizes_;
};

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// One training-like step's buffers: long-lived model states, then activations
// and workspace made in forward/backward and freed by the step's end.
void training_like_step(MemoryLedger& ledger, std::vector<Buffer>& states, bool first) {
  if (first) {
    states.emplace_back(ledger, MemoryCategory::parameters, 3 * kMiB + 100);
    states.emplace_back(ledger, MemoryCategory::gradients, 3 * kMiB + 100);
    states.emplace_back(ledger, MemoryCategory::optimizer_states, 6 * kMiB + 200);
  }
  std::vector<Buffer> activations;
  for (int layer = 0; layer < 4; ++layer) {
    activations.emplace_back(ledger, MemoryCategory::activations, 700 * 1024);  // small pool
    activations.emplace_back(ledger, MemoryCategory::activations, 2 * kMiB + 4096);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(activations.back().bytes()); i += 4096)
      static_cast<unsigned char*>(activations.back().data())[i] = 1;  // dirty it, as a kernel would
  }
  for (int layer = 3; layer >= 0; --layer) {
    Buffer scratch(ledger, MemoryCategory::workspace, 100 + layer);  // a few bytes, each its own size
    QCOMPARE(static_cast<const unsigned char*>(scratch.data())[99], 0);
    activations.pop_back();
    activations.pop_back();
  }
}

}  // namespace

class TestCachingAllocator : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void sizes_round_to_512_bytes_then_2_mib();
  void second_identical_step_makes_no_raw_calls();
  void reused_blocks_are_zeroed_and_best_fit();
  void failed_raw_allocation_empties_the_cache_and_retries();
  void too_big_request_throws_with_the_message();
  void concurrent_allocations_keep_the_books();
};

void TestCachingAllocator::sizes_round_to_512_bytes_then_2_mib() {
  QCOMPARE(CachingDeviceMemory::rounded_size(1), std::int64_t{512});
  QCOMPARE(CachingDeviceMemory::rounded_size(512), std::int64_t{512});
  QCOMPARE(CachingDeviceMemory::rounded_size(513), std::int64_t{1024});
  QCOMPARE(CachingDeviceMemory::rounded_size(kMiB), kMiB);
  QCOMPARE(CachingDeviceMemory::rounded_size(kMiB + 1), 2 * kMiB);
  QCOMPARE(CachingDeviceMemory::rounded_size(2 * kMiB + 1), 4 * kMiB);
}

void TestCachingAllocator::second_identical_step_makes_no_raw_calls() {
  auto raw_owner = std::make_unique<FakeRawAllocator>(std::int64_t{1} << 30);
  FakeRawAllocator& raw = *raw_owner;
  CachingDeviceMemory memory(std::move(raw_owner));
  MemoryLedger ledger;
  ledger.set_device_memory(&memory);
  std::vector<Buffer> states;
  training_like_step(ledger, states, true);
  const int raw_after_first = raw.allocate_calls;
  const CachingStats first = memory.stats();
  QVERIFY(raw_after_first > 0);
  QCOMPARE(first.raw_allocations, std::int64_t{raw_after_first});
  training_like_step(ledger, states, false);
  training_like_step(ledger, states, false);
  QCOMPARE(raw.allocate_calls.load(), raw_after_first);  // zero raw calls in steady state
  QCOMPARE(raw.free_calls.load(), 0);
  const CachingStats steady = memory.stats();
  QCOMPARE(steady.reserved_bytes, first.reserved_bytes);
  QVERIFY(steady.cache_hits > first.cache_hits);
  QCOMPARE(steady.reserved_bytes, raw.live());
  // In use: the model states, rounded; the rest is cached.
  QCOMPARE(steady.in_use_bytes, 4 * kMiB + 4 * kMiB + 8 * kMiB);
  QCOMPARE(steady.cached_bytes, steady.reserved_bytes - steady.in_use_bytes);
  QCOMPARE(ledger.current()[MemoryCategory::activations], std::int64_t{0});
  DeviceUsage usage;
  QVERIFY(memory.device_usage(usage));
  QCOMPARE(usage.reserved_bytes, steady.reserved_bytes);
  QCOMPARE(usage.used_bytes, raw.live());
  states.clear();
  memory.empty_cache();
  QCOMPARE(raw.live(), std::int64_t{0});
  QCOMPARE(memory.stats().reserved_bytes, std::int64_t{0});
}

void TestCachingAllocator::reused_blocks_are_zeroed_and_best_fit() {
  auto raw_owner = std::make_unique<FakeRawAllocator>(std::int64_t{1} << 30);
  FakeRawAllocator& raw = *raw_owner;
  CachingDeviceMemory memory(std::move(raw_owner));
  void* big = memory.allocate_zeroed(8 * kMiB);
  void* mid = memory.allocate_zeroed(4 * kMiB);
  std::memset(mid, 0x5A, static_cast<std::size_t>(4 * kMiB));
  memory.release(big);
  memory.release(mid);
  // 3 MiB + 1 rounds to 4 MiB: the 4 MiB block fits best, not the 8 MiB one.
  void* again = memory.allocate_zeroed(3 * kMiB + 1);
  QCOMPARE(again, mid);
  for (std::int64_t i = 0; i < 3 * kMiB + 1; i += 4093) QCOMPARE(static_cast<unsigned char*>(again)[i], 0);
  // 1 MiB + 1 (2 MiB class) would waste over half of the 8 MiB block: a fresh one.
  const int calls = raw.allocate_calls;
  void* small_large = memory.allocate_zeroed(kMiB + 1);
  QVERIFY(small_large != big);
  QCOMPARE(raw.allocate_calls.load(), calls + 1);
  // A small request never takes a large block.
  void* tiny = memory.allocate_zeroed(100);
  QVERIFY(tiny != big);
  memory.release(again);
  memory.release(small_large);
  memory.release(tiny);
  memory.release(tiny);  // a second release of the same pointer is ignored
  QCOMPARE(memory.stats().in_use_bytes, std::int64_t{0});
}

void TestCachingAllocator::failed_raw_allocation_empties_the_cache_and_retries() {
  auto raw_owner = std::make_unique<FakeRawAllocator>(10 * kMiB);
  FakeRawAllocator& raw = *raw_owner;
  CachingDeviceMemory memory(std::move(raw_owner));
  // Two 4 MiB blocks cached: 8 of the 10 MiB held, none in use.
  memory.release(memory.allocate_zeroed(4 * kMiB));
  void* a = memory.allocate_zeroed(4 * kMiB);  // reuses the first block
  memory.release(memory.allocate_zeroed(4 * kMiB));
  memory.release(a);
  QCOMPARE(memory.stats().reserved_bytes, 8 * kMiB);
  QCOMPARE(memory.stats().in_use_bytes, std::int64_t{0});
  // 6 MiB fits no cached block and not beside them; after emptying the cache it does.
  void* six = memory.allocate_zeroed(6 * kMiB);
  QVERIFY(six != nullptr);
  const CachingStats stats = memory.stats();
  QCOMPARE(stats.cache_flushes, std::int64_t{1});
  QCOMPARE(stats.raw_frees, std::int64_t{2});
  QCOMPARE(stats.reserved_bytes, 6 * kMiB);
  QCOMPARE(raw.live(), 6 * kMiB);
  memory.release(six);
}

void TestCachingAllocator::too_big_request_throws_with_the_message() {
  auto raw_owner = std::make_unique<FakeRawAllocator>(10 * kMiB);
  CachingDeviceMemory memory(std::move(raw_owner));
  MemoryLedger ledger;
  ledger.set_device_memory(&memory);
  Buffer held(ledger, MemoryCategory::parameters, 3 * kMiB);
  memory.release(memory.allocate_zeroed(2 * kMiB));  // cached, freed by the retry
  try {
    Buffer too_big(ledger, MemoryCategory::activations, 9 * kMiB);
    QFAIL("a request larger than the device was served");
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    for (const std::string& part : {std::string("fake:0"), std::to_string(9 * kMiB) + " bytes of activations",
                                    std::string("after freeing ") + std::to_string(2 * kMiB) + " cached bytes",
                                    std::string("fake device out of memory")})
      QVERIFY2(m.find(part) != std::string::npos, m.c_str());
    QCOMPARE(e.category(), MemoryCategory::activations);
    QCOMPARE(e.bytes(), 9 * kMiB);
  }
  QCOMPARE(memory.stats().reserved_bytes, 4 * kMiB);  // the held buffer's block only
  QCOMPARE(ledger.current_total(), 3 * kMiB);
}

void TestCachingAllocator::concurrent_allocations_keep_the_books() {
  auto raw_owner = std::make_unique<FakeRawAllocator>(std::int64_t{1} << 30);
  CachingDeviceMemory memory(std::move(raw_owner));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&memory, t] {
      for (int i = 0; i < 200; ++i) {
        void* p = memory.allocate_zeroed(512 * (1 + (i + t) % 7));
        memory.release(p);
      }
    });
  for (auto& t : threads) t.join();
  const CachingStats stats = memory.stats();
  QCOMPARE(stats.in_use_bytes, std::int64_t{0});
  QCOMPARE(stats.cached_bytes, stats.reserved_bytes);
  QCOMPARE(stats.raw_allocations + stats.cache_hits, std::int64_t{800});
}

QTEST_GUILESS_MAIN(TestCachingAllocator)
#include "test_caching_allocator.moc"
