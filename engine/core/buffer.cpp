// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include <new>
#include <utility>

namespace shardscope {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads
// Blocks from 1 MiB up are mapped from the system and unmapped when freed, so
// the process's resident memory follows the ledger: glibc would keep a freed
// block that its adaptive threshold had moved onto the heap. Fresh pages read
// as zero and count as resident only once written, as on a GPU's allocator.
constexpr std::size_t kMapThreshold = std::size_t{1} << 20;

std::size_t host_block_size(std::int64_t bytes) {
  const auto n = static_cast<std::size_t>(bytes);
  if (n >= kMapThreshold) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
  }
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

void* allocate_host(std::int64_t bytes) {
  const std::size_t size = host_block_size(bytes);
  if (size >= kMapThreshold) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (p != nullptr) std::memset(p, 0, size);
  return p;
}

void free_host(void* data, std::int64_t bytes) noexcept {
  const std::size_t size = host_block_size(bytes);
  if (size >= kMapThreshold)
    munmap(data, size);
  else
    std::free(data);
}
}  // namespace

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
    data_ = allocate_host(bytes);
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
    else free_host(data_, bytes_);
    if (ledger_ != nullptr) ledger_->release(category_, bytes_);
  }
  data_ = nullptr;
  bytes_ = 0;
  ledger_ = nullptr;
}

}  // namespace shardscope
