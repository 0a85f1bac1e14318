// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/caching_device_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <utility>

namespace shardscope {

namespace {
std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
}  // namespace

CachingDeviceMemory::CachingDeviceMemory(std::unique_ptr<RawDeviceAllocator> raw) : raw_(std::move(raw)) {
  if (raw_ == nullptr) throw std::invalid_argument("CachingDeviceMemory needs a raw allocator");
}

CachingDeviceMemory::~CachingDeviceMemory() {
  const std::lock_guard lock(mutex_);
  empty_cache_locked();
  for (const auto& [pointer, size] : in_use_) raw_->free(pointer);
}

std::int64_t CachingDeviceMemory::rounded_size(std::int64_t bytes) {
  if (bytes <= kSmallLimit) return round_up(std::max<std::int64_t>(bytes, 1), kSmallRound);
  return round_up(bytes, kLargeRound);
}

void* CachingDeviceMemory::take_cached_locked(std::int64_t size) {
  auto& pool = size <= kSmallLimit ? free_small_ : free_large_;
  const auto best = pool.lower_bound(size);  // the smallest free block that fits
  // Blocks are never split, so a block more than twice the request would waste
  // over half of itself: leave it (an out-of-memory retry still frees it).
  if (best == pool.end() || best->first > 2 * size) return nullptr;
  const auto [block_size, pointer] = *best;
  pool.erase(best);
  stats_.cached_bytes -= block_size;
  stats_.in_use_bytes += block_size;
  ++stats_.cache_hits;
  in_use_.emplace(pointer, block_size);
  return pointer;
}

void* CachingDeviceMemory::allocate_zeroed(std::int64_t bytes) {
  if (bytes <= 0) throw std::invalid_argument("CachingDeviceMemory: allocation of " + std::to_string(bytes) + " bytes");
  const std::int64_t size = rounded_size(bytes);
  void* pointer = nullptr;
  {
    const std::lock_guard lock(mutex_);
    pointer = take_cached_locked(size);
    if (pointer == nullptr) {
      try {
        pointer = raw_->allocate(size);
      } catch (const std::exception&) {
        // What PyTorch does on a failed cudaMalloc: give every cached block back
        // to the device (they may be the wrong sizes, or fragment it) and retry once.
        const std::int64_t cached = stats_.cached_bytes;
        empty_cache_locked();
        ++stats_.cache_flushes;
        try {
          pointer = raw_->allocate(size);
        } catch (const std::exception& again) {
          throw std::runtime_error(raw_->name() + ": a block of " + std::to_string(size) + " bytes (" +
                                   std::to_string(bytes) + " rounded up) does not fit after freeing " +
                                   std::to_string(cached) + " cached bytes; the cache holds " +
                                   std::to_string(stats_.reserved_bytes) + " bytes in use: " + again.what());
        }
      }
      ++stats_.raw_allocations;
      stats_.reserved_bytes += size;
      stats_.in_use_bytes += size;
      in_use_.emplace(pointer, size);
    }
  }
  // Outside the lock: a GPU memset may wait for queued work. The block is ours.
  try {
    raw_->zero(pointer, bytes);
  } catch (...) {
    release(pointer);
    throw;
  }
  return pointer;
}

void CachingDeviceMemory::release(void* pointer) noexcept {
  if (pointer == nullptr) return;
  const std::lock_guard lock(mutex_);
  const auto it = in_use_.find(pointer);
  if (it == in_use_.end()) return;  // not ours: nothing to do that would be safe
  const std::int64_t size = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= size;
  stats_.cached_bytes += size;
  (size <= kSmallLimit ? free_small_ : free_large_).emplace(size, pointer);
}

std::string CachingDeviceMemory::name() const {
  return raw_->name();
}

bool CachingDeviceMemory::device_usage(DeviceUsage& usage) const {
  if (!raw_->device_usage(usage)) return false;
  const std::lock_guard lock(mutex_);
  usage.reserved_bytes = stats_.reserved_bytes;
  return true;
}

CachingStats CachingDeviceMemory::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void CachingDeviceMemory::empty_cache() {
  const std::lock_guard lock(mutex_);
  empty_cache_locked();
}

void CachingDeviceMemory::empty_cache_locked() {
  for (auto* pool : {&free_small_, &free_large_}) {
    for (const auto& [size, pointer] : *pool) {
      raw_->free(pointer);
      ++stats_.raw_frees;
      stats_.reserved_bytes -= size;
      stats_.cached_bytes -= size;
    }
    pool->clear();
  }
}

// ---- HostRawAllocator ----

void* HostRawAllocator::allocate(std::int64_t bytes) {
  const std::lock_guard lock(mutex_);
  if (live_ + bytes > capacity_)
    throw std::runtime_error("the test device's " + std::to_string(capacity_) + " bytes are full (" +
                             std::to_string(live_) + " held)");
  constexpr std::size_t kAlignment = 64;  // as Buffer's host memory; the sizes are multiples of 512
  void* pointer = std::aligned_alloc(kAlignment, static_cast<std::size_t>(bytes));
  if (pointer == nullptr) throw std::bad_alloc();
  live_ += bytes;
  sizes_.emplace(pointer, bytes);
  return pointer;
}

void HostRawAllocator::free(void* pointer) noexcept {
  const std::lock_guard lock(mutex_);
  const auto it = sizes_.find(pointer);
  if (it == sizes_.end()) return;
  live_ -= it->second;
  sizes_.erase(it);
  std::free(pointer);
}

void HostRawAllocator::zero(void* pointer, std::int64_t bytes) {
  std::memset(pointer, 0, static_cast<std::size_t>(bytes));
}

bool HostRawAllocator::device_usage(DeviceUsage& usage) const {
  const std::lock_guard lock(mutex_);
  usage.device = 0;
  usage.used_bytes = live_;
  usage.total_bytes = capacity_;
  return true;
}

}  // namespace shardscope
