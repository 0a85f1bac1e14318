// SPDX-License-Identifier: GPL-3.0-or-later
// A pretend GPU for CPU tests of the engine's device paths: FakeDeviceMemory
// hands out host blocks under "device" addresses (bit 62 set: not canonical on
// x86-64, so the host cannot dereference them, as it cannot a GPU's), and
// CheckedDeviceBackend runs the CPU backend's ops on the real addresses behind
// them, says host_memory() == false, and throws when an op is handed a pointer
// that is not device memory (or a device pointer where it wants a host one).
// Code that memcpy's or reads a device buffer on the host crashes here, and
// code that passes host values where a GPU needs device memory fails, as on a
// GPU, without one.
#pragma once

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/memory_ledger.h"
#include "ops/backend.h"

namespace shardscope::testing {

// The blocks of one pretend device, shared by the ranks on it.
inline constexpr std::uintptr_t kDeviceTag = std::uintptr_t{1} << 62;

// The host address behind a device address (and back): the tag bit flipped.
template <class T>
T* flip(T* p) {
  return p == nullptr ? nullptr : reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) ^ kDeviceTag);
}

class FakeDevice {
 public:
  void* allocate(std::int64_t bytes) {
    void* p = std::calloc(static_cast<std::size_t>(bytes), 1);
    if (p == nullptr) throw std::bad_alloc();
    void* tagged = flip(p);
    std::lock_guard lock(mutex_);
    blocks_[reinterpret_cast<std::uintptr_t>(tagged)] = bytes;
    return tagged;
  }
  void release(void* tagged) {
    {
      std::lock_guard lock(mutex_);
      blocks_.erase(reinterpret_cast<std::uintptr_t>(tagged));
    }
    std::free(flip(tagged));
  }
  // Whether [p, p + bytes) lies inside one device block.
  bool holds(const void* p, std::int64_t bytes = 0) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    return a + static_cast<std::uintptr_t>(bytes) <= it->first + static_cast<std::uintptr_t>(it->second);
  }
  std::size_t live_blocks() const {
    std::lock_guard lock(mutex_);
    return blocks_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::int64_t> blocks_;
};

class FakeDeviceMemory final : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<FakeDevice> device) : device_(std::move(device)) {}
  void* allocate_zeroed(std::int64_t bytes) override { return device_->allocate(bytes); }
  void release(void* pointer) noexcept override { device_->release(pointer); }
  std::string name() const override { return "fake:0"; }

 private:
  std::shared_ptr<FakeDevice> device_;
};

class CheckedDeviceBackend final : public Backend {
 public:
  CheckedDeviceBackend(std::shared_ptr<FakeDevice> device, int threads)
      : device_(std::move(device)), cpu_(make_cpu_backend(CpuBackendOptions{threads})) {}

  std::string name() const override { return "fake device (CPU ops)"; }
  bool host_memory() const override { return false; }

  void gemm(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override {
    on_device("gemm", A, B, C);
    cpu_->gemm(ta, tb, M, N, K, alpha, flip(A), lda, flip(B), ldb, beta, flip(C), ldc);
  }
  void gemm_batched_strided(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda,
                            std::int64_t sa, const float* B, int ldb, std::int64_t sb, float beta, float* C, int ldc,
                            std::int64_t sc, int batch) override {
    on_device("gemm_batched_strided", A, B, C);
    cpu_->gemm_batched_strided(ta, tb, M, N, K, alpha, flip(A), lda, sa, flip(B), ldb, sb, beta, flip(C), ldc, sc,
                               batch);
  }
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override {
    on_device("linear_forward", out, in, weight, bias);
    cpu_->linear_forward(flip(out), flip(in), flip(weight), flip(bias), rows, in_f, out_f);
  }
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override {
    on_device("linear_backward", d_in, d_weight, d_bias, d_out, in, weight);
    cpu_->linear_backward(flip(d_in), flip(d_weight), flip(d_bias), flip(d_out), flip(in), flip(weight), rows, in_f,
                          out_f, accumulate);
  }
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override {
    on_device("embedding_forward", out, ids, type_ids, tokens, positions, types);
    cpu_->embedding_forward(flip(out), flip(ids), flip(type_ids), flip(tokens), flip(positions), flip(types), B, T, C);
  }
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override {
    on_device("embedding_backward", d_tokens, d_positions, d_types, d_out, ids, type_ids);
    cpu_->embedding_backward(flip(d_tokens), flip(d_positions), flip(d_types), flip(d_out), flip(ids), flip(type_ids),
                             B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override {
    on_device("layernorm_forward", out, mean, rstd, in, weight, bias);
    cpu_->layernorm_forward(flip(out), flip(mean), flip(rstd), flip(in), flip(weight), flip(bias), rows, C, eps);
  }
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override {
    on_device("layernorm_backward", d_in, d_weight, d_bias, d_out, in, weight, mean, rstd);
    cpu_->layernorm_backward(flip(d_in), flip(d_weight), flip(d_bias), flip(d_out), flip(in), flip(weight), flip(mean),
                             flip(rstd), rows, C, accumulate);
  }
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override {
    on_device("gelu_forward", out, in);
    cpu_->gelu_forward(flip(out), flip(in), n, kind);
  }
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override {
    on_device("gelu_backward", d_in, d_out, in);
    cpu_->gelu_backward(flip(d_in), flip(d_out), flip(in), n, kind);
  }
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override {
    on_device("attention_forward", out, probs, qkv, mask.padding);
    AttentionMask real = mask;
    real.padding = flip(mask.padding);
    cpu_->attention_forward(flip(out), flip(probs), flip(qkv), B, T, C, H, real);
  }
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* probs, int B,
                          int T, int C, int H) override {
    on_device("attention_backward", d_qkv, scratch, d_out, qkv, probs);
    cpu_->attention_backward(flip(d_qkv), flip(scratch), flip(d_out), flip(qkv), flip(probs), B, T, C, H);
  }
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override {
    on_device("cross_entropy_forward", losses, logits, targets);
    return cpu_->cross_entropy_forward(flip(losses), flip(logits), flip(targets), rows, V);
  }
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override {
    on_device("cross_entropy_backward", d_logits, logits, targets);
    cpu_->cross_entropy_backward(flip(d_logits), flip(logits), flip(targets), rows, V, dloss_per_row);
  }
  void add(float* out, const float* a, const float* b, std::int64_t n) override {
    on_device("add", out, a, b);
    cpu_->add(flip(out), flip(a), flip(b), n);
  }
  void add_bias_rows(float* x, const float* bias, int rows, int C) override {
    on_device("add_bias_rows", x, bias);
    cpu_->add_bias_rows(flip(x), flip(bias), rows, C);
  }
  void scale(float* x, float factor, std::int64_t n) override {
    on_device("scale", x);
    cpu_->scale(flip(x), factor, n);
  }
  void fill(float* x, float value, std::int64_t n) override {
    on_device("fill", x);
    cpu_->fill(flip(x), value, n);
  }
  void tanh_forward(float* out, const float* in, std::int64_t n) override {
    on_device("tanh_forward", out, in);
    cpu_->tanh_forward(flip(out), flip(in), n);
  }
  double sum_of_squares(const float* x, std::int64_t n) override {
    on_device("sum_of_squares", x);
    return cpu_->sum_of_squares(flip(x), n);
  }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0) span("copy", dst, bytes), span("copy", src, bytes);
    cpu_->copy(flip(dst), flip(src), bytes);
  }
  void upload(void* dst, const void* host_src, std::int64_t bytes) override {
    if (bytes > 0) span("upload", dst, bytes), host("upload", host_src);
    cpu_->upload(flip(dst), host_src, bytes);
  }
  void download(void* host_dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0) host("download", host_dst), span("download", src, bytes);
    cpu_->download(host_dst, flip(src), bytes);
  }
  void zero(void* dst, std::int64_t bytes) override {
    if (bytes > 0) span("zero", dst, bytes);
    cpu_->zero(flip(dst), bytes);
  }
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override {
    on_device("widen", in, out);
    cpu_->widen(dtype, flip(in), flip(out), n);
  }
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override {
    on_device("narrow", in, out);
    cpu_->narrow(dtype, flip(in), flip(out), n);
  }
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override {
    on_device("add_16", dst, src);
    cpu_->add_16(dtype, flip(dst), flip(src), n);
  }
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override {
    on_device("accumulate_16", dst, src);
    cpu_->accumulate_16(dtype, flip(dst), flip(src), n);
  }
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    on_device("first_non_finite_16", x);
    return cpu_->first_non_finite_16(dtype, flip(x), n);
  }
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    on_device("sum_of_squares_16", x);
    return cpu_->sum_of_squares_16(dtype, flip(x), n);
  }
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override {
    if (n > 0) span("divide", x, n * static_cast<std::int64_t>(dtype_size(dtype)));
    cpu_->divide(dtype, flip(x), n, divisor);
  }
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override {
    on_device("adamw", params, grads, m, v);
    cpu_->adamw(flip(params), flip(grads), flip(m), flip(v), n, step);
  }

 private:
  // Every non-null pointer must be device memory.
  template <class... P>
  void on_device(const char* op, const P*... pointers) const {
    (check(op, static_cast<const void*>(pointers)), ...);
  }
  void check(const char* op, const void* p) const {
    if (p != nullptr && !device_->holds(p))
      throw std::logic_error(std::string("fake device: ") + op + " was given a host pointer");
  }
  void span(const char* op, const void* p, std::int64_t bytes) const {
    if (!device_->holds(p, bytes))
      throw std::logic_error(std::string("fake device: ") + op + " was given memory that is not " +
                             std::to_string(bytes) + " bytes of device memory");
  }
  void host(const char* op, const void* p) const {
    if (device_->holds(p))
      throw std::logic_error(std::string("fake device: ") + op + " was given device memory as host");
  }

  std::shared_ptr<FakeDevice> device_;
  std::unique_ptr<Backend> cpu_;
};

}  // namespace shardscope::testing
