// SPDX-License-Identifier: GPL-3.0-or-later
// A backend whose ops are asynchronous, as a GPU stream's are, and as late as
// they can be: LaggingBackend queues every op that returns nothing and runs
// the queue only when the host has to wait for it (synchronize, or an op that
// hands the host a value or host memory, which on a CUDA stream waits for the
// work queued before it). Paired with a backend that runs its ops at once (a
// second stream that races ahead), code that lets one stream touch memory
// another stream has not finished writing or reading gets stale or clobbered
// data here, every time, where on a GPU it would only sometimes.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/fake_device.h"
#include "ops/backend.h"

namespace shardscope::testing {

class LaggingBackend final : public Backend {
 public:
  explicit LaggingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  ~LaggingBackend() override {
    if (on_destroy) on_destroy();  // e.g. leave the device's barrier before going
    flush();
  }
  std::function<void()> on_destroy;

  std::string name() const override { return "lagging " + inner_->name(); }
  bool host_memory() const override { return inner_->host_memory(); }
  // May be called from another thread than the one queueing (the DDP reducer's).
  void synchronize() override { flush(); }
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return queue_.size();
  }

  void gemm(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override {
    later([=, this] { inner_->gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
  }
  void gemm_batched_strided(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda,
                            std::int64_t sa, const float* B, int ldb, std::int64_t sb, float beta, float* C, int ldc,
                            std::int64_t sc, int batch) override {
    later([=, this] {
      inner_->gemm_batched_strided(ta, tb, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
    });
  }
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override {
    later([=, this] { inner_->linear_forward(out, in, weight, bias, rows, in_f, out_f); });
  }
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override {
    later([=, this] { inner_->linear_backward(d_in, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, accumulate); });
  }
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override {
    later([=, this] { inner_->embedding_forward(out, ids, type_ids, tokens, positions, types, B, T, C); });
  }
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override {
    later([=, this] { inner_->embedding_backward(d_tokens, d_positions, d_types, d_out, ids, type_ids, B, T, C); });
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override {
    later([=, this] { inner_->layernorm_forward(out, mean, rstd, in, weight, bias, rows, C, eps); });
  }
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override {
    later([=, this] {
      inner_->layernorm_backward(d_in, d_weight, d_bias, d_out, in, weight, mean, rstd, rows, C, accumulate);
    });
  }
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override {
    later([=, this] { inner_->gelu_forward(out, in, n, kind); });
  }
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override {
    later([=, this] { inner_->gelu_backward(d_in, d_out, in, n, kind); });
  }
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override {
    later([=, this] { inner_->attention_forward(out, probs, qkv, B, T, C, H, mask); });
  }
  AttentionKernel attention_kernel(int head_dim) const override { return inner_->attention_kernel(head_dim); }
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, const AttentionMask& mask) override {
    later([=, this] { inner_->attention_backward(d_qkv, scratch, d_out, qkv, out, probs, B, T, C, H, mask); });
  }
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override {
    flush();
    return inner_->cross_entropy_forward(losses, logits, targets, rows, V);
  }
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override {
    later([=, this] { inner_->cross_entropy_backward(d_logits, logits, targets, rows, V, dloss_per_row); });
  }
  void add(float* out, const float* a, const float* b, std::int64_t n) override {
    later([=, this] { inner_->add(out, a, b, n); });
  }
  void add_bias_rows(float* x, const float* bias, int rows, int C) override {
    later([=, this] { inner_->add_bias_rows(x, bias, rows, C); });
  }
  void scale(float* x, float factor, std::int64_t n) override {
    later([=, this] { inner_->scale(x, factor, n); });
  }
  void fill(float* x, float value, std::int64_t n) override {
    later([=, this] { inner_->fill(x, value, n); });
  }
  void tanh_forward(float* out, const float* in, std::int64_t n) override {
    later([=, this] { inner_->tanh_forward(out, in, n); });
  }
  double sum_of_squares(const float* x, std::int64_t n) override {
    flush();
    return inner_->sum_of_squares(x, n);
  }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    later([=, this] { inner_->copy(dst, src, bytes); });
  }
  void upload(void* dst, const void* host_src, std::int64_t bytes) override {
    flush();
    inner_->upload(dst, host_src, bytes);
  }
  void download(void* host_dst, const void* src, std::int64_t bytes) override {
    flush();
    inner_->download(host_dst, src, bytes);
  }
  void zero(void* dst, std::int64_t bytes) override {
    later([=, this] { inner_->zero(dst, bytes); });
  }
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override {
    later([=, this] { inner_->widen(dtype, in, out, n); });
  }
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override {
    later([=, this] { inner_->narrow(dtype, in, out, n); });
  }
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override {
    later([=, this] { inner_->add_16(dtype, dst, src, n); });
  }
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override {
    later([=, this] { inner_->accumulate_16(dtype, dst, src, n); });
  }
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    flush();
    return inner_->first_non_finite_16(dtype, x, n);
  }
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    flush();
    return inner_->sum_of_squares_16(dtype, x, n);
  }
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override {
    later([=, this] { inner_->divide(dtype, x, n, divisor); });
  }
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override {
    later([=, this] { inner_->adamw(params, grads, m, v, n, step); });
  }

 private:
  void later(std::function<void()> op) {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(op));
  }
  // Runs the queued ops in order (one flush at a time, as a stream runs its work).
  void flush() {
    std::lock_guard run(run_mutex_);
    std::vector<std::function<void()>> ops;
    {
      std::lock_guard lock(mutex_);
      ops.swap(queue_);
    }
    for (auto& op : ops) op();
  }

  std::unique_ptr<Backend> inner_;
  mutable std::mutex mutex_;  // guards queue_
  std::mutex run_mutex_;
  std::vector<std::function<void()>> queue_;
};

}  // namespace shardscope::testing

namespace shardscope::testing {

// A device's memory as the CUDA glue (ops/device.cpp) gives it, for lagging
// backends: a released block is not reused while queued ops may still touch
// it, because each allocation first zeroes its block on the legacy default
// stream, which waits for every blocking stream of the device. Here: each
// allocation runs every lagging backend of the device first, then frees the
// blocks released before.
class LaggingDevice {
 public:
  explicit LaggingDevice(std::shared_ptr<FakeDevice> device) : device_(std::move(device)) {}
  ~LaggingDevice() { barrier(); }
  void attach(LaggingBackend* backend) {
    std::lock_guard lock(mutex_);
    backends_.push_back(backend);
  }
  void detach(LaggingBackend* backend) {
    std::lock_guard lock(mutex_);
    std::erase(backends_, backend);
  }
  void* allocate_zeroed(std::int64_t bytes) {
    barrier();
    return device_->allocate(bytes);
  }
  void release(void* p) {
    std::lock_guard lock(mutex_);
    released_.push_back(p);
  }
  void barrier() {
    std::vector<void*> released;
    {
      std::lock_guard lock(mutex_);
      for (LaggingBackend* b : backends_) b->synchronize();
      released.swap(released_);
    }
    for (void* p : released) device_->release(p);
  }

 private:
  std::shared_ptr<FakeDevice> device_;
  std::mutex mutex_;
  std::vector<LaggingBackend*> backends_;
  std::vector<void*> released_;
};

class LaggingDeviceMemory final : public DeviceMemory {
 public:
  explicit LaggingDeviceMemory(std::shared_ptr<LaggingDevice> device) : device_(std::move(device)) {}
  void* allocate_zeroed(std::int64_t bytes) override { return device_->allocate_zeroed(bytes); }
  void release(void* pointer) noexcept override { device_->release(pointer); }
  std::string name() const override { return "lagging fake:0"; }

 private:
  std::shared_ptr<LaggingDevice> device_;
};

}  // namespace shardscope::testing
