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

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "core/memory_ledger.h"
#include "ops/backend.h"

namespace shardscope::testing {

inline constexpr std::uintptr_t kDeviceTag = std::uintptr_t{1} << 62;

// The host address behind a device address (and back): the tag bit flipped.
template <class T>
T* flip(T* p) {
  return p == nullptr ? nullptr : reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) ^ kDeviceTag);
}

// A pretend CUDA stream: ops run in order on a thread of their own, after
// short random pauses, while the host thread that queued them goes on. Code
// that reads a result before it waited for it (synchronize, a download) sees
// stale data here as it would on a GPU. An op's exception is kept and
// rethrown by the next drain, like a CUDA error at the next synchronizing call.
class FakeStream {
 public:
  explicit FakeStream(unsigned seed) : random_(seed), worker_([this] { work(); }) {}
  ~FakeStream() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  void enqueue(std::function<void()> op) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(op));
    }
    wake_.notify_all();
  }
  void drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !running_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<void()> op = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      const int pause = random_() % 4 == 0 ? static_cast<int>(random_() % 200) : 0;
      lock.unlock();
      if (pause > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause));
      std::exception_ptr failure;
      try {
        op();
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !error_) error_ = failure;
      running_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::minstd_rand random_;
  std::thread worker_;  // last: it starts once the members above exist
};

// The blocks of one pretend device, shared by the ranks on it. Allocation and
// release wait for every stream of the device, as cudaMalloc and the caching
// allocator's memset on the legacy default stream do.
class FakeDevice {
 public:
  void add_stream(FakeStream* stream) {
    std::lock_guard lock(streams_mutex_);
    streams_.insert(stream);
  }
  void remove_stream(FakeStream* stream) {
    std::lock_guard lock(streams_mutex_);
    streams_.erase(stream);
  }
  void drain_all() {
    std::lock_guard lock(streams_mutex_);
    for (FakeStream* s : streams_) s->drain();
  }
  void* allocate(std::int64_t bytes) {
    drain_all();
    void* p = std::calloc(static_cast<std::size_t>(bytes), 1);
    if (p == nullptr) throw std::bad_alloc();
    void* tagged = flip(p);
    std::lock_guard lock(mutex_);
    blocks_[reinterpret_cast<std::uintptr_t>(tagged)] = bytes;
    return tagged;
  }
  void release(void* tagged) {
    drain_all();
    {
      std::lock_guard lock(mutex_);
      blocks_.erase(reinterpret_cast<std::uintptr_t>(tagged));
    }
    std::free(flip(tagged));
  }
  // As a caching allocator hands out a block that it zeroes on a rank's stream:
  // no wait for any stream, and the contents are garbage (0xFF bytes) until
  // that stream's zero runs. forget() unregisters a block whose memory the
  // caller frees once its stream is done with it.
  void* allocate_unordered(std::int64_t bytes) {
    void* p = std::malloc(static_cast<std::size_t>(bytes));
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0xFF, static_cast<std::size_t>(bytes));
    void* tagged = flip(p);
    std::lock_guard lock(mutex_);
    blocks_[reinterpret_cast<std::uintptr_t>(tagged)] = bytes;
    return tagged;
  }
  void forget(void* tagged) {
    std::lock_guard lock(mutex_);
    blocks_.erase(reinterpret_cast<std::uintptr_t>(tagged));
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
  std::mutex streams_mutex_;
  std::set<FakeStream*> streams_;
};

class CheckedDeviceBackend final : public Backend {
 public:
  // asynchronous: ops run on a FakeStream of this backend (seeded), as on a GPU.
  CheckedDeviceBackend(std::shared_ptr<FakeDevice> device, int threads, bool asynchronous = false, unsigned seed = 1)
      : device_(std::move(device)), cpu_(make_cpu_backend(CpuBackendOptions{threads})) {
    if (asynchronous) {
      stream_ = std::make_unique<FakeStream>(seed);
      device_->add_stream(stream_.get());
    }
  }
  ~CheckedDeviceBackend() override {
    if (stream_ != nullptr) {
      device_->remove_stream(stream_.get());
      try {
        stream_->drain();
      } catch (...) {  // a destructor reports nothing
      }
    }
  }

  std::string name() const override { return "fake device (CPU ops)"; }
  // Runs `op` on this backend's stream after the ops queued so far (at once without one).
  void after_queued(std::function<void()> op) { run(std::move(op)); }
  bool host_memory() const override { return false; }
  void synchronize() override {
    if (stream_ != nullptr) stream_->drain();
  }

  void gemm(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override {
    on_device("gemm", A, B, C);
    run([=, this] { cpu_->gemm(ta, tb, M, N, K, alpha, flip(A), lda, flip(B), ldb, beta, flip(C), ldc); });
  }
  void gemm_batched_strided(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda,
                            std::int64_t sa, const float* B, int ldb, std::int64_t sb, float beta, float* C, int ldc,
                            std::int64_t sc, int batch) override {
    on_device("gemm_batched_strided", A, B, C);
    run([=, this] {
      cpu_->gemm_batched_strided(ta, tb, M, N, K, alpha, flip(A), lda, sa, flip(B), ldb, sb, beta, flip(C), ldc, sc,
                                 batch);
    });
  }
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override {
    on_device("linear_forward", out, in, weight, bias);
    run([=, this] { cpu_->linear_forward(flip(out), flip(in), flip(weight), flip(bias), rows, in_f, out_f); });
  }
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override {
    on_device("linear_backward", d_in, d_weight, d_bias, d_out, in, weight);
    run([=, this] {
      cpu_->linear_backward(flip(d_in), flip(d_weight), flip(d_bias), flip(d_out), flip(in), flip(weight), rows, in_f,
                            out_f, accumulate);
    });
  }
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override {
    on_device("embedding_forward", out, ids, type_ids, tokens, positions, types);
    run([=, this] {
      cpu_->embedding_forward(flip(out), flip(ids), flip(type_ids), flip(tokens), flip(positions), flip(types), B, T,
                              C);
    });
  }
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override {
    on_device("embedding_backward", d_tokens, d_positions, d_types, d_out, ids, type_ids);
    run([=, this] {
      cpu_->embedding_backward(flip(d_tokens), flip(d_positions), flip(d_types), flip(d_out), flip(ids), flip(type_ids),
                               B, T, C);
    });
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override {
    on_device("layernorm_forward", out, mean, rstd, in, weight, bias);
    run([=, this] {
      cpu_->layernorm_forward(flip(out), flip(mean), flip(rstd), flip(in), flip(weight), flip(bias), rows, C, eps);
    });
  }
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override {
    on_device("layernorm_backward", d_in, d_weight, d_bias, d_out, in, weight, mean, rstd);
    run([=, this] {
      cpu_->layernorm_backward(flip(d_in), flip(d_weight), flip(d_bias), flip(d_out), flip(in), flip(weight),
                               flip(mean), flip(rstd), rows, C, accumulate);
    });
  }
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override {
    on_device("gelu_forward", out, in);
    run([=, this] { cpu_->gelu_forward(flip(out), flip(in), n, kind); });
  }
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override {
    on_device("gelu_backward", d_in, d_out, in);
    run([=, this] { cpu_->gelu_backward(flip(d_in), flip(d_out), flip(in), n, kind); });
  }
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override {
    on_device("attention_forward", out, probs, qkv, mask.padding);
    AttentionMask real = mask;
    real.padding = flip(mask.padding);
    run([=, this] { cpu_->attention_forward(flip(out), flip(probs), flip(qkv), B, T, C, H, real); });
  }
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, const AttentionMask& mask) override {
    on_device("attention_backward", d_qkv, scratch, d_out, qkv, out, probs, mask.padding);
    AttentionMask real = mask;
    real.padding = flip(mask.padding);
    run([=, this] {
      cpu_->attention_backward(flip(d_qkv), flip(scratch), flip(d_out), flip(qkv), flip(out), flip(probs), B, T, C, H,
                               real);
    });
  }
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override {
    on_device("cross_entropy_forward", losses, logits, targets);
    return value([=, this] { return cpu_->cross_entropy_forward(flip(losses), flip(logits), flip(targets), rows, V); });
  }
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override {
    on_device("cross_entropy_backward", d_logits, logits, targets);
    run([=, this] {
      cpu_->cross_entropy_backward(flip(d_logits), flip(logits), flip(targets), rows, V, dloss_per_row);
    });
  }
  void add(float* out, const float* a, const float* b, std::int64_t n) override {
    on_device("add", out, a, b);
    run([=, this] { cpu_->add(flip(out), flip(a), flip(b), n); });
  }
  void add_bias_rows(float* x, const float* bias, int rows, int C) override {
    on_device("add_bias_rows", x, bias);
    run([=, this] { cpu_->add_bias_rows(flip(x), flip(bias), rows, C); });
  }
  void scale(float* x, float factor, std::int64_t n) override {
    on_device("scale", x);
    run([=, this] { cpu_->scale(flip(x), factor, n); });
  }
  void fill(float* x, float value, std::int64_t n) override {
    on_device("fill", x);
    run([=, this] { cpu_->fill(flip(x), value, n); });
  }
  void tanh_forward(float* out, const float* in, std::int64_t n) override {
    on_device("tanh_forward", out, in);
    run([=, this] { cpu_->tanh_forward(flip(out), flip(in), n); });
  }
  double sum_of_squares(const float* x, std::int64_t n) override {
    on_device("sum_of_squares", x);
    return value([=, this] { return cpu_->sum_of_squares(flip(x), n); });
  }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0) span("copy", dst, bytes), span("copy", src, bytes);
    run([=, this] { cpu_->copy(flip(dst), flip(src), bytes); });
  }
  void upload(void* dst, const void* host_src, std::int64_t bytes) override {
    if (bytes > 0) span("upload", dst, bytes), host("upload", host_src);
    run([=, this] { cpu_->upload(flip(dst), host_src, bytes); });
    synchronize();  // pageable host memory: the copy is done when upload returns
  }
  void download(void* host_dst, const void* src, std::int64_t bytes) override {
    if (bytes > 0) host("download", host_dst), span("download", src, bytes);
    run([=, this] { cpu_->download(host_dst, flip(src), bytes); });
    synchronize();
  }
  void zero(void* dst, std::int64_t bytes) override {
    if (bytes > 0) span("zero", dst, bytes);
    run([=, this] { cpu_->zero(flip(dst), bytes); });
  }
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override {
    on_device("widen", in, out);
    run([=, this] { cpu_->widen(dtype, flip(in), flip(out), n); });
  }
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override {
    on_device("narrow", in, out);
    run([=, this] { cpu_->narrow(dtype, flip(in), flip(out), n); });
  }
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override {
    on_device("add_16", dst, src);
    run([=, this] { cpu_->add_16(dtype, flip(dst), flip(src), n); });
  }
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override {
    on_device("accumulate_16", dst, src);
    run([=, this] { cpu_->accumulate_16(dtype, flip(dst), flip(src), n); });
  }
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    on_device("first_non_finite_16", x);
    return value([=, this] { return cpu_->first_non_finite_16(dtype, flip(x), n); });
  }
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    on_device("sum_of_squares_16", x);
    return value([=, this] { return cpu_->sum_of_squares_16(dtype, flip(x), n); });
  }
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override {
    if (n > 0) span("divide", x, n * static_cast<std::int64_t>(dtype_size(dtype)));
    run([=, this] { cpu_->divide(dtype, flip(x), n, divisor); });
  }
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override {
    on_device("adamw", params, grads, m, v);
    run([=, this] { cpu_->adamw(flip(params), flip(grads), flip(m), flip(v), n, step); });
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

  // An op on the stream (or at once without one).
  template <class Op>
  void run(Op op) {
    if (stream_ != nullptr)
      stream_->enqueue(std::move(op));
    else
      op();
  }
  // An op whose result the host reads: queued, then waited for.
  template <class Op>
  std::invoke_result_t<Op> value(Op op) {
    if (stream_ == nullptr) return op();
    std::invoke_result_t<Op> result{};
    stream_->enqueue([&result, op] { result = op(); });
    stream_->drain();
    return result;
  }

  std::shared_ptr<FakeDevice> device_;
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<FakeStream> stream_;
};

// A rank's memory on the pretend device. Without zero_on, blocks come zeroed
// and every allocation and release waits for all streams (cudaMalloc, and the
// legacy-stream memset of make_cuda_device_memory without a backend). With
// zero_on (the rank's compute backend, as make_cuda_device_memory(device,
// backend)), a block starts as garbage that zero_on's stream zeroes, and is
// freed on that stream after the ops queued on it: code that touches a fresh
// block from another stream before waiting for zero_on sees the garbage or has
// its writes wiped, as it would on a GPU.
class FakeDeviceMemory final : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<FakeDevice> device, CheckedDeviceBackend* zero_on = nullptr)
      : device_(std::move(device)), zero_on_(zero_on) {}
  void* allocate_zeroed(std::int64_t bytes) override {
    if (zero_on_ == nullptr) return device_->allocate(bytes);
    void* p = device_->allocate_unordered(bytes);
    zero_on_->zero(p, bytes);
    return p;
  }
  void release(void* pointer) noexcept override {
    if (zero_on_ == nullptr) {
      device_->release(pointer);
      return;
    }
    device_->forget(pointer);
    void* host = flip(pointer);
    zero_on_->after_queued([host] { std::free(host); });
  }
  std::string name() const override { return "fake:0"; }

 private:
  std::shared_ptr<FakeDevice> device_;
  CheckedDeviceBackend* zero_on_;
};

}  // namespace shardscope::testing
