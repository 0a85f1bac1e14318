// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's row ops at gpt2-124m shapes (B=16, T=1024, C=768, H=12,
// V=50257): each op timed alone with a synchronize around it, median of
// --reps runs after two warm-ups, with the bytes it must move at least
// (every input read once, every output written once) as GB/s and as a share
// of the GPU's peak memory bandwidth; then the fused attention of a bf16
// backend (cuda_flash_attention.cu), causal, forward and backward, with its
// matmul TFLOP/s (4 B H T^2 hd forward, 10 B H T^2 hd backward: 2 and 5
// matmuls, halved for the causal half). Prints "skipped: no GPU (...)" and exits
// 0 where no GPU is usable.
//   bench_row_ops [--reps N] [--batch B] [--seq T]      Env: PEAK_GBPS overrides the peak.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_row_kernels.cuh"
#include "ops/device.h"

using namespace shardscope;

namespace {

void cuda_or_die(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "bench_row_ops: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

// A device buffer of n floats (or ints) filled on the host.
template <typename T>
T* device_buffer(const std::vector<T>& host) {
  T* p = nullptr;
  cuda_or_die(cudaMalloc(reinterpret_cast<void**>(&p), host.size() * sizeof(T)), "cudaMalloc");
  cuda_or_die(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * (static_cast<float>(rng.next_u64() >> 40) / static_cast<float>(1 << 24) - 0.5f);
  return v;
}

std::vector<std::int32_t> random_ids(std::size_t n, std::uint64_t seed, int bound) {
  Rng rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(bound));
  return v;
}

// Peak DRAM bandwidth in GB/s and where the figure came from.
std::pair<double, std::string> peak_bandwidth(int device, const std::string& name) {
  if (const char* env = std::getenv("PEAK_GBPS")) return {std::atof(env), "PEAK_GBPS"};
  struct Known {
    const char* name;
    double gbps;
  };
  for (const Known k :
       {Known{"H200", 4800}, Known{"H100 NVL", 3900}, Known{"H100 PCIe", 2000}, Known{"H100", 3350},
        Known{"A100-SXM4-80GB", 2039}, Known{"A100 80GB PCIe", 1935}, Known{"A100", 1555}, Known{"4090", 1008}})
    if (name.find(k.name) != std::string::npos) return {k.gbps, "datasheet"};
  int clock_khz = 0, bus_bits = 0;  // double data rate: 2 transfers per clock
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess && clock_khz > 0)
    return {2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9, "memory clock x bus width"};
  return {0.0, "unknown"};
}

int run_benchmark(int argc, char** argv) {
  int reps = 20, B = 16, T = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--reps")
      reps = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--batch")
      B = std::atoi(argv[i + 1]);
    else if (flag == "--seq")
      T = std::atoi(argv[i + 1]);
  }
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) {
    std::printf("skipped: no GPU (%s)\n", probe.reason.c_str());
    return 0;
  }
  const int C = 768, H = 12, V = 50257, rows = B * T, hidden = 4 * C;
  CudaBackend gpu(CudaBackendOptions{0, GemmMath::fp32});
  const auto [peak, peak_source] = peak_bandwidth(0, gpu.name());
  std::printf("row ops, gpt2-124m shapes B=%d T=%d C=%d H=%d V=%d on %s; peak %.0f GB/s (%s); median of %d\n", B, T, C,
              H, V, gpu.name().c_str(), peak, peak_source.c_str(), reps);

  const std::size_t n_act = static_cast<std::size_t>(rows) * C;
  const std::size_t n_probs = static_cast<std::size_t>(B) * H * T * T;
  const std::size_t n_logits = static_cast<std::size_t>(rows) * V;
  float* x = device_buffer(random_floats(n_act, 1, 2.0f));
  float* dy = device_buffer(random_floats(n_act, 2, 1.0f));
  float* out = device_buffer(std::vector<float>(n_act, 0.0f));
  float* w = device_buffer(random_floats(C, 3, 1.0f));
  float* b = device_buffer(random_floats(C, 4, 1.0f));
  float* mean = device_buffer(std::vector<float>(static_cast<std::size_t>(rows), 0.0f));
  float* rstd = device_buffer(std::vector<float>(static_cast<std::size_t>(rows), 0.0f));
  float* dw = device_buffer(std::vector<float>(static_cast<std::size_t>(hidden), 0.0f));
  float* db = device_buffer(std::vector<float>(static_cast<std::size_t>(hidden), 0.0f));
  float* fc = device_buffer(random_floats(static_cast<std::size_t>(rows) * hidden, 5, 1.0f));  // (rows, 4C)
  float* probs = device_buffer(random_floats(n_probs, 6, 8.0f));  // softmax in place, again each repetition
  float* d_probs = device_buffer(random_floats(n_probs, 7, 1.0f));
  float* logits = device_buffer(random_floats(n_logits, 8, 8.0f));
  float* d_logits = device_buffer(std::vector<float>(n_logits, 0.0f));
  std::int32_t* targets = device_buffer(random_ids(static_cast<std::size_t>(rows), 9, V));
  std::int32_t* ids = device_buffer(random_ids(static_cast<std::size_t>(rows), 10, V));
  float* d_tokens = device_buffer(std::vector<float>(static_cast<std::size_t>(V) * C, 0.0f));
  float* d_positions = device_buffer(std::vector<float>(static_cast<std::size_t>(T) * C, 0.0f));
  gpu.layernorm_forward(out, mean, rstd, x, w, b, rows, C, 1e-5f);  // statistics for the backward

  // op name, bytes it must move, the call
  auto run = [&](const char* name, double bytes, const std::function<void()>& op) {
    for (int i = 0; i < 2; ++i) op();
    gpu.synchronize();
    std::vector<double> seconds;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      op();
      gpu.synchronize();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    const double gbps = bytes / median / 1e9;
    std::printf("%-34s %9.3f ms %9.1f GB/s", name, median * 1e3, gbps);
    if (peak > 0.0) std::printf("  %5.1f%% of peak", 100.0 * gbps / peak);
    std::printf("\n");
  };
  const double f = sizeof(float);
  const double act = static_cast<double>(n_act) * f, probs_bytes = static_cast<double>(n_probs) * f;
  const double logits_bytes = static_cast<double>(n_logits) * f;
  cudaStream_t stream = gpu.stream();
  const float scale = 1.0f / std::sqrt(static_cast<float>(C / H));

  run("layernorm_forward (rows, C)", 2 * act, [&] { gpu.layernorm_forward(out, mean, rstd, x, w, b, rows, C, 1e-5f); });
  run("layernorm_backward (+ dw, db)", 3 * act,
      [&] { gpu.layernorm_backward(out, dw, db, dy, x, w, mean, rstd, rows, C, false); });
  run("bias grad: column sums (rows, 4C)", static_cast<double>(rows) * hidden * f, [&] {
    cuda_detail::column_sums(
        stream, db, fc, rows, hidden,
        static_cast<float*>(gpu.workspace(cuda_detail::column_partials_bytes(rows, hidden, 1), "bench")), "bench");
  });
  run("attention softmax causal (B,H,T,T)", 1.5 * probs_bytes,  // reads the live half, writes all
      [&] { cuda_detail::attention_softmax_rows(stream, probs, B, H, T, true, nullptr, scale); });
  run("attention softmax full (B,H,T,T)", 2 * probs_bytes,
      [&] { cuda_detail::attention_softmax_rows(stream, probs, B, H, T, false, nullptr, scale); });
  run("attention softmax backward", 3 * probs_bytes, [&] {
    cuda_detail::attention_softmax_backward_rows(stream, probs, d_probs, static_cast<long long>(B) * H * T, T, scale);
  });
  run("cross_entropy_forward (rows, V)", logits_bytes,
      [&] { gpu.cross_entropy_forward(mean, logits, targets, rows, V); });
  run("cross_entropy_backward (rows, V)", 2 * logits_bytes,
      [&] { gpu.cross_entropy_backward(d_logits, logits, targets, rows, V, 1.0f / static_cast<float>(rows)); });
  // d_out once, d_positions read and written, touched token rows read and written (at most B*T of them).
  run("embedding_backward (tokens, pos)", act + 2.0 * T * C * f + 2.0 * act,
      [&] { gpu.embedding_backward(d_tokens, d_positions, nullptr, dy, ids, nullptr, B, T, C); });

  // Fused attention, bf16 math: qkv (B, T, 3C), the rows' log-sum-exp and D (B, H, T).
  CudaBackend bf16(CudaBackendOptions{0, GemmMath::bf16});
  const std::size_t n_rows = static_cast<std::size_t>(B) * H * T;
  float* qkv = device_buffer(random_floats(3 * n_act, 11, 2.0f));
  float* d_qkv = device_buffer(std::vector<float>(3 * n_act, 0.0f));
  float* lse = device_buffer(std::vector<float>(n_rows, 0.0f));
  float* row_dot = device_buffer(std::vector<float>(n_rows, 0.0f));
  const AttentionMask causal{true, nullptr};
  const double causal_flops = 2.0 * B * H * static_cast<double>(T) * T * (C / H) / 2.0;  // one matmul, causal half
  auto run_attention = [&](const char* name, double flops, const std::function<void()>& op) {
    for (int i = 0; i < 2; ++i) op();
    bf16.synchronize();
    std::vector<double> seconds;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      op();
      bf16.synchronize();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("%-34s %9.3f ms %9.1f TFLOP/s\n", name, median * 1e3, flops / median / 1e12);
  };
  std::printf("fused attention (%s)\n", bf16.attention_kernel(C / H) == AttentionKernel::fused ? "fused" : "NOT fused");
  run_attention("attention fwd causal bf16 fused", 2 * causal_flops,
                [&] { bf16.attention_forward(out, lse, qkv, B, T, C, H, causal); });
  run_attention("attention bwd causal bf16 fused", 5 * causal_flops,
                [&] { bf16.attention_backward(d_qkv, row_dot, dy, qkv, out, lse, B, T, C, H, causal); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_benchmark(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_row_ops: error: %s\n", e.what());
    return 1;
  }
}
