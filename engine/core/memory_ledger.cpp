// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/memory_ledger.h"

#include <stdexcept>
#include <string>

#include "core/checked_math.h"

namespace shardscope {

namespace {
void raise_to(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
}  // namespace

// Checked: estimates of huge configs add categories near 2^63 (core/checked_math.h).
std::int64_t MemoryBytes::total() const {
  CheckedSize sum = 0;
  for (std::int64_t b : bytes) sum += b;
  return sum.value();
}

void MemoryLedger::allocate(MemoryCategory category, std::int64_t bytes) {
  const auto i = static_cast<std::size_t>(category);
  raise_to(peak_[i], current_[i].fetch_add(bytes, std::memory_order_relaxed) + bytes);
  raise_to(total_peak_, total_current_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryLedger::release(MemoryCategory category, std::int64_t bytes) {
  const auto i = static_cast<std::size_t>(category);
  if (current_[i].fetch_sub(bytes, std::memory_order_relaxed) < bytes) {
    throw std::logic_error("memory ledger: released more " + std::string(memory_category_name(category)) +
                           " bytes than were allocated");
  }
  total_current_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryBytes MemoryLedger::current() const {
  MemoryBytes out;
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) out.bytes[i] = current_[i].load(std::memory_order_relaxed);
  return out;
}

MemoryBytes MemoryLedger::peak() const {
  MemoryBytes out;
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) out.bytes[i] = peak_[i].load(std::memory_order_relaxed);
  return out;
}

}  // namespace shardscope
