// SPDX-License-Identifier: GPL-3.0-or-later
// How the in-process communicator moves and sums a rank's buffers
// (CommMemory, in_process_group.h): in host memory with memcpy and loops the
// compiler vectorizes, or on a device shared by the ranks through the rank's
// communication backend. Both round 16-bit partial sums at every ring hop, as
// NCCL's half-precision reductions do, so host and device runs agree bit for bit.
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/half.h"
#include "core/memory_ledger.h"
#include "ops/backend.h"
#include "parallel/in_process_group.h"

namespace shardscope {

namespace {

// ---- host memory ----

// The arithmetic of one element type. 16-bit sums widen to f32, add, and round back.
struct F32Elems {
  using T = float;
  static void add_into(T* dst, const T* src, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
  }
  static void add_to(T* dst, const T* a, const T* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
  }
  static void divide(T* data, std::int64_t n, int divisor) {
    const float d = static_cast<float>(divisor);
    for (std::int64_t i = 0; i < n; ++i) data[i] /= d;
  }
};

template <DType D>
struct HalfElems {
  using T = std::uint16_t;
  static float widen(T v) { return D == DType::f16 ? half::f16_bits_to_float(v) : half::bf16_bits_to_float(v); }
  static T narrow(float v) { return D == DType::f16 ? half::float_to_f16_bits(v) : half::float_to_bf16_bits(v); }
  static void add_into(T* dst, const T* src, std::int64_t n) { half::add_into(D, dst, src, n); }
  static void add_to(T* dst, const T* a, const T* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = narrow(widen(a[i]) + widen(b[i]));
  }
  static void divide(T* data, std::int64_t n, int divisor) { half::divide(D, data, n, static_cast<float>(divisor)); }
};

// Calls body(Elems{}) for dtype's arithmetic.
template <class Body>
void with_elems(DType dtype, Body&& body) {
  switch (dtype) {
    case DType::f32:
      return body(F32Elems{});
    case DType::f16:
      return body(HalfElems<DType::f16>{});
    case DType::bf16:
      return body(HalfElems<DType::bf16>{});
    case DType::i32:
      break;
  }
  throw std::invalid_argument("collective element type must be f32, f16 or bf16");
}

// The staging of one scratch slot: a Buffer charged to the rank's ledger
// (category communication) when the communicator has one, else plain memory.
class ScratchSlot {
 public:
  void* grow(MemoryLedger* ledger, std::int64_t bytes) {
    if (held_ >= bytes) return data();
    if (ledger == nullptr) {
      plain_.resize(static_cast<std::size_t>(bytes));
    } else {
      buffer_ = Buffer();  // the old block goes back before the larger one is taken
      buffer_ = Buffer(*ledger, MemoryCategory::communication, bytes);
    }
    held_ = bytes;
    return data();
  }
  void* data() { return buffer_.empty() ? static_cast<void*>(plain_.data()) : buffer_.data(); }

 private:
  Buffer buffer_;
  std::vector<std::byte> plain_;
  std::int64_t held_ = 0;
};

class HostCommMemory final : public CommMemory {
 public:
  explicit HostCommMemory(MemoryLedger* ledger) : ledger_(ledger) {}
  bool device() const override { return false; }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0 && dst != src) std::memcpy(dst, src, static_cast<std::size_t>(bytes));
  }
  void add_into(DType dtype, void* dst, const void* src, std::int64_t n) override {
    with_elems(dtype, [&](auto e) {
      using T = typename decltype(e)::T;
      e.add_into(static_cast<T*>(dst), static_cast<const T*>(src), n);
    });
  }
  void add_to(DType dtype, void* dst, const void* a, const void* b, std::int64_t n) override {
    with_elems(dtype, [&](auto e) {
      using T = typename decltype(e)::T;
      e.add_to(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);
    });
  }
  void divide(DType dtype, void* data, std::int64_t n, int divisor) override {
    with_elems(dtype, [&](auto e) {
      using T = typename decltype(e)::T;
      e.divide(static_cast<T*>(data), n, divisor);
    });
  }
  void to_host(void* host_dst, const void* src, std::int64_t bytes) override { copy(host_dst, src, bytes); }
  void from_host(void* dst, const void* host_src, std::int64_t bytes) override { copy(dst, host_src, bytes); }
  void settle() override {}
  void* scratch(int slot, std::int64_t bytes) override {
    return scratch_.at(static_cast<std::size_t>(slot)).grow(ledger_, bytes);
  }

 private:
  MemoryLedger* ledger_;
  std::array<ScratchSlot, 2> scratch_;
};

// ---- device memory (ranks sharing one GPU) ----

class DeviceCommMemory final : public CommMemory {
 public:
  explicit DeviceCommMemory(const CommDevice& d)
      : compute_(*d.compute), backend_(*d.backend), memory_(*d.memory), ledger_(d.ledger) {}
  ~DeviceCommMemory() override {
    for (auto& s : scratch_) give_back(s);
  }

  bool device() const override { return true; }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0 && dst != src) backend_.copy(dst, src, bytes);
  }
  void add_into(DType dtype, void* dst, const void* src, std::int64_t n) override {
    if (n <= 0) return;
    if (dtype == DType::f32)
      backend_.add(static_cast<float*>(dst), static_cast<const float*>(dst), static_cast<const float*>(src), n);
    else
      backend_.add_16(sixteen(dtype), static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(src), n);
  }
  void add_to(DType dtype, void* dst, const void* a, const void* b, std::int64_t n) override {
    if (n <= 0) return;
    if (dtype == DType::f32) {
      backend_.add(static_cast<float*>(dst), static_cast<const float*>(a), static_cast<const float*>(b), n);
      return;
    }
    // narrow(widen(a) + widen(b)) is symmetric, so dst may alias either operand.
    const void* other = dst == b ? a : b;
    if (dst != a && dst != b) copy(dst, a, n * 2);
    backend_.add_16(sixteen(dtype), static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(other), n);
  }
  void divide(DType dtype, void* data, std::int64_t n, int divisor) override {
    if (n > 0) backend_.divide(dtype, data, n, static_cast<float>(divisor));
  }
  void to_host(void* host_dst, const void* src, std::int64_t bytes) override {
    backend_.download(host_dst, src, bytes);
  }
  void from_host(void* dst, const void* host_src, std::int64_t bytes) override {
    backend_.upload(dst, host_src, bytes);
  }
  void settle() override {
    compute_.synchronize();
    if (&backend_ != &compute_) backend_.synchronize();
  }
  void* scratch(int slot, std::int64_t bytes) override {
    Scratch& s = scratch_.at(static_cast<std::size_t>(slot));
    if (s.bytes < bytes) {
      if (s.pointer != nullptr) {
        settle();  // queued copies may still read or write the old block
        give_back(s);
      }
      s.pointer = memory_.allocate_zeroed(bytes);
      s.bytes = bytes;
      if (ledger_ != nullptr) ledger_->allocate(MemoryCategory::communication, bytes);
      settle();  // the block may be zeroed on the compute stream; the comm stream writes it next
    }
    return s.pointer;
  }

 private:
  static DType sixteen(DType dtype) {
    if (dtype != DType::f16 && dtype != DType::bf16)
      throw std::invalid_argument("collective element type must be f32, f16 or bf16");
    return dtype;
  }
  struct Scratch {
    void* pointer = nullptr;
    std::int64_t bytes = 0;
  };
  void give_back(Scratch& s) {
    if (s.pointer == nullptr) return;
    memory_.release(s.pointer);
    if (ledger_ != nullptr) ledger_->release(MemoryCategory::communication, s.bytes);
    s = Scratch{};
  }
  Backend& compute_;
  Backend& backend_;
  DeviceMemory& memory_;
  MemoryLedger* ledger_;
  std::array<Scratch, 2> scratch_;
};

}  // namespace

std::unique_ptr<CommMemory> make_host_comm_memory(MemoryLedger* ledger) {
  return std::make_unique<HostCommMemory>(ledger);
}

std::unique_ptr<CommMemory> make_device_comm_memory(const CommDevice& device) {
  if (device.compute == nullptr || device.backend == nullptr || device.memory == nullptr)
    throw std::invalid_argument("a communicator's device needs its compute backend, its own backend and its memory");
  return std::make_unique<DeviceCommMemory>(device);
}

}  // namespace shardscope
