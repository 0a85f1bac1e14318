// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include <new>
#include <utility>

namespace shardscope {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads
}

Buffer::Buffer(MemoryLedger& ledger, MemoryCategory category, std::int64_t bytes)
    : bytes_(bytes), category_(category), ledger_(&ledger) {
  if (bytes <= 0) {
    bytes_ = 0;
    ledger_ = nullptr;
    return;
  }
  DeviceMemory* device = ledger.device_memory();
  std::string failure;
  if (device != nullptr) {
    try {
      data_ = device->allocate_zeroed(bytes);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  } else {
    const auto rounded = (static_cast<std::size_t>(bytes) + kAlignment - 1) / kAlignment * kAlignment;
    data_ = std::aligned_alloc(kAlignment, rounded);
    if (data_ != nullptr) std::memset(data_, 0, rounded);
  }
  if (data_ == nullptr) {
    const std::int64_t held = ledger.current_total();
    throw OutOfMemory("out of " + (device != nullptr ? device->name() : std::string("host")) + " memory: " +
                      std::to_string(bytes) + " bytes of " + std::string(memory_category_name(category)) +
                      " asked for, with " + std::to_string(held) + " bytes already held by this rank" +
                          (failure.empty() ? "" : " (" + failure + ")"),
                      category, bytes);
  }
  ledger.allocate(category, bytes);
}

Buffer::~Buffer() { free_now(); }

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      category_(other.category_),
      ledger_(std::exchange(other.ledger_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    free_now();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    category_ = other.category_;
    ledger_ = std::exchange(other.ledger_, nullptr);
  }
  return *this;
}

void Buffer::free_now() {
  if (data_ != nullptr) {
    DeviceMemory* device = ledger_ != nullptr ? ledger_->device_memory() : nullptr;
    if (device != nullptr) device->release(data_);
    else std::free(data_);
    if (ledger_ != nullptr) ledger_->release(category_, bytes_);
  }
  data_ = nullptr;
  bytes_ = 0;
  ledger_ = nullptr;
}

}  // namespace shardscope
