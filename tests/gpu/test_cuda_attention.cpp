// SPDX-License-Identifier: GPL-3.0-or-later
// Attention on the CUDA backend against the CPU backend: the materialized path
// of fp32 math (two cuBLAS gemms around the warp-per-row softmax) and the fused
// kernels of bf16/fp16 math (cuda_flash_attention.cu), also against their host
// twin. Where no GPU is usable, every test is skipped with "skipped: no GPU
// (<reason>)".
//
// Tolerances (|gpu - cpu| <= atol + rtol |cpu|, inputs ~ N(0, 1)):
//   materialized  1e-4 + 1e-4 |x| (two gemms around a softmax);
//   fused         against the CPU's fp32 attention as test_flash_attention.cpp
//                 bounds its host twin (fp16 out 4e-3 + 4e-3 |x|, d_qkv 1e-2 +
//                 1e-2 |x|; bf16 out 3e-2 + 3e-2 |x|, d_qkv 8e-2 + 5e-2 |x|),
//                 twice that at T = 1024 (longer sums); against the host twin
//                 itself (same rounded operands, only the tensor cores' order of
//                 sums differs, which can move a rounded P or dS by one 16-bit
//                 step) fp16 1e-3 + 1e-3 |x|, bf16 1e-2 + 1e-2 |x| (d_qkv twice
//                 that), the log-sum-exp 1e-4 + 1e-5 |x|.
#include <cuda_runtime.h>

#include <QTest>
#include <cmath>
#include <string>
#include <vector>

#include "engine/flash_reference.h"
#include "engine/test_support.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

class TestCudaAttention : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void attention_forward_backward();
  void fused_attention_matches_cpu_and_host_twin();
};

void TestCudaAttention::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

// Warp-per-row softmax: T = 1, T not a multiple of 32, T above two warps'
// width; padding with all keys masked, one live key and holes; and scores large
// enough that most e^(s - max) clamp (qkv scaled by 8).
void TestCudaAttention::attention_forward_backward() {
  const int B = 3, H = 4, C = 64;
  struct Shape {
    int T;
    float qkv_scale;
  };
  for (const Shape sh : {Shape{37, 1.0f}, Shape{1, 1.0f}, Shape{75, 1.0f}, Shape{40, 8.0f}}) {
    const int T = sh.T;
    const auto qkv = randoms(static_cast<std::size_t>(B * T * 3 * C), 50, sh.qkv_scale);
    const auto dy = randoms(static_cast<std::size_t>(B * T * C), 51);
    std::vector<std::int32_t> padding(static_cast<std::size_t>(B * T), 1);
    for (int t = 4 * T / 5; t < T; ++t) padding[static_cast<std::size_t>(0 * T + t)] = 0;  // sequence 0: padded tail
    for (int t = 0; t < T; t += 3) padding[static_cast<std::size_t>(2 * T + t)] = 0;       // sequence 2: holes
    for (int t = 0; t < T; ++t) padding[static_cast<std::size_t>(1 * T + t)] = t == std::min(5, T - 1);  // one key
    DeviceArray gqkv(qkv), gdy(dy);
    DeviceArray gpad(padding);
    struct Case {
      const char* name;
      bool causal, padded;
    };
    for (const Case c : {Case{"causal", true, false}, Case{"padding", false, true}, Case{"causal+padding", true, true},
                         Case{"none", false, false}}) {
      const QString what = QString("attention T=%1 x%2 %3 ").arg(T).arg(sh.qkv_scale).arg(c.name);
      const std::size_t probs_n = static_cast<std::size_t>(B * H * T * T);
      std::vector<float> out(static_cast<std::size_t>(B * T * C)), probs(probs_n);
      DeviceArray gout(out), gprobs(probs);
      gpu->attention_forward(gout.get(), gprobs.get(), gqkv.get(), B, T, C, H,
                             AttentionMask{c.causal, c.padded ? gpad.get() : nullptr});
      cpu->attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H,
                             AttentionMask{c.causal, c.padded ? padding.data() : nullptr});
      // Large scores: the scores themselves differ by the gemms' rounding (~1e-4 of ~50), amplified by exp.
      const Tolerance probs_tol = sh.qkv_scale > 1.0f ? Tolerance{1e-3, 1e-2} : kRow;
      const Tolerance out_tol = sh.qkv_scale > 1.0f ? Tolerance{1e-2, 1e-2} : kAttention;
      COMPARE_NEAR(what + "probs", gprobs.host(), probs, probs_tol);
      COMPARE_NEAR(what + "out", gout.host(), out, out_tol);

      auto d_qkv = randoms(qkv.size(), 52);  // overwritten by both
      std::vector<float> scratch(probs_n);
      DeviceArray gd_qkv(d_qkv), gscratch(scratch), cprobs(probs);
      gpu->attention_backward(gd_qkv.get(), gscratch.get(), gdy.get(), gqkv.get(), gout.get(), cprobs.get(), B, T, C, H,
                              AttentionMask{c.causal, c.padded ? gpad.get() : nullptr});
      cpu->attention_backward(d_qkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), probs.data(), B, T, C, H,
                              AttentionMask{c.causal, c.padded ? padding.data() : nullptr});
      COMPARE_NEAR(what + "d_qkv", gd_qkv.host(), d_qkv, sh.qkv_scale > 1.0f ? out_tol : kAttention);
    }
  }
}

// The fused kernels of a bf16/fp16 backend: T = 1 and T not a multiple of the
// tiles (17, 100), T = 1024 (gpt2's), head dims 16, 32, 64 and 128 (the largest
// shared tiles, ~82 KB: over the 48 KB default, under sm_86/89's 99 KB); causal, padding (a
// padded tail, holes, a sequence without a real token) and both. probs and
// scratch are (B, H, T) here: the rows' log-sum-exp and D = rowsum(dO o O).
void TestCudaAttention::fused_attention_matches_cpu_and_host_twin() {
  struct Shape {
    int B, T, hd, H;
  };
  for (const DType dtype : {DType::bf16, DType::f16}) {
    const bool bf16 = dtype == DType::bf16;
    CudaBackend fast(CudaBackendOptions{0, bf16 ? GemmMath::bf16 : GemmMath::fp16});
    const FlashRounding rounding = bf16 ? FlashRounding::bf16 : FlashRounding::fp16;
    for (const Shape sh : {Shape{3, 1, 64, 2}, Shape{3, 17, 16, 2}, Shape{3, 17, 32, 3}, Shape{3, 64, 64, 2},
                           Shape{3, 100, 32, 2}, Shape{3, 100, 64, 2}, Shape{3, 100, 128, 2}, Shape{2, 1024, 64, 2}}) {
      const int B = sh.B, T = sh.T, H = sh.H, C = H * sh.hd;
      QVERIFY(fast.attention_kernel(sh.hd) == AttentionKernel::fused);
      const double widen = T >= 1024 ? 2.0 : 1.0;
      const Tolerance out_cpu = bf16 ? Tolerance{3e-2 * widen, 3e-2 * widen} : Tolerance{4e-3 * widen, 4e-3 * widen};
      const Tolerance grad_cpu = bf16 ? Tolerance{8e-2 * widen, 5e-2 * widen} : Tolerance{1e-2 * widen, 1e-2 * widen};
      const Tolerance out_twin = bf16 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-3, 1e-3};
      const Tolerance grad_twin{2 * out_twin.atol, 2 * out_twin.rtol};
      const auto qkv = randoms(static_cast<std::size_t>(B) * T * 3 * C, 300 + T);
      const auto dy = randoms(static_cast<std::size_t>(B) * T * C, 301 + T);
      std::vector<std::int32_t> padding(static_cast<std::size_t>(B) * T, 1);
      for (int t = 2 * T / 3; t < T; ++t) padding[static_cast<std::size_t>(t)] = 0;  // sequence 0: padded tail
      for (int t = 1; t < T; t += 3) padding[static_cast<std::size_t>(T + t)] = 0;   // sequence 1: holes
      if (B > 2)
        for (int t = 0; t < T; ++t) padding[static_cast<std::size_t>(2 * T + t)] = 0;  // sequence 2: no real token
      DeviceArray gqkv(qkv), gdy(dy);
      DeviceArray gpad(padding);
      struct Case {
        const char* name;
        bool causal, padded;
      };
      for (const Case c :
           {Case{"causal", true, false}, Case{"padding", false, true}, Case{"causal+padding", true, true}}) {
        const QString what =
            QString("fused %1 T=%2 hd=%3 %4 ").arg(bf16 ? "bf16" : "fp16").arg(T).arg(sh.hd).arg(c.name);
        const AttentionMask host_mask{c.causal, c.padded ? padding.data() : nullptr};
        const AttentionMask device_mask{c.causal, c.padded ? gpad.get() : nullptr};
        // The CPU backend: fp32, materialized.
        std::vector<float> out(dy.size()), probs(static_cast<std::size_t>(B) * H * T * T), d_qkv(qkv.size());
        std::vector<float> scratch(probs.size());
        cpu->attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H, host_mask);
        cpu->attention_backward(d_qkv.data(), scratch.data(), dy.data(), qkv.data(), out.data(), probs.data(), B, T, C,
                                H, host_mask);
        // The host twin: the kernels' algorithm with the same rounding.
        std::vector<float> twin_out(dy.size()), twin_lse(static_cast<std::size_t>(B) * H * T), twin_d_qkv(qkv.size());
        flash_forward_reference(rounding, twin_out.data(), twin_lse.data(), qkv.data(), B, T, C, H, host_mask);
        flash_backward_reference(rounding, twin_d_qkv.data(), dy.data(), qkv.data(), twin_out.data(), twin_lse.data(),
                                 B, T, C, H, host_mask);
        // The GPU: probs and scratch are (B, H, T).
        const std::vector<float> rows(static_cast<std::size_t>(B) * H * T, 7.0f);
        const std::vector<float> sevens(qkv.size(), 7.0f);  // d_qkv is overwritten everywhere
        DeviceArray gout(std::vector<float>(dy.size(), 7.0f)), glse(rows), gd_qkv(sevens), gscratch(rows);
        fast.attention_forward(gout.get(), glse.get(), gqkv.get(), B, T, C, H, device_mask);
        fast.attention_backward(gd_qkv.get(), gscratch.get(), gdy.get(), gqkv.get(), gout.get(), glse.get(), B, T, C, H,
                                device_mask);
        const auto got_out = gout.host(), got_d_qkv = gd_qkv.host();
        COMPARE_NEAR(what + "out vs cpu", got_out, out, out_cpu);
        COMPARE_NEAR(what + "d_qkv vs cpu", got_d_qkv, d_qkv, grad_cpu);
        COMPARE_NEAR(what + "out vs host twin", got_out, twin_out, out_twin);
        COMPARE_NEAR(what + "d_qkv vs host twin", got_d_qkv, twin_d_qkv, grad_twin);
        // Log-sum-exp: +inf exactly where no key is live, close elsewhere.
        auto lse = glse.host();
        for (std::size_t i = 0; i < lse.size(); ++i) {
          QCOMPARE(std::isinf(lse[i]), std::isinf(twin_lse[i]));
          if (std::isinf(twin_lse[i])) lse[i] = twin_lse[i] = 0.0f;
        }
        COMPARE_NEAR(what + "lse vs host twin", lse, twin_lse, (Tolerance{1e-4, 1e-5}));
        if (T == 100) {  // no atomics: the same bits on a second run
          DeviceArray again_out(std::vector<float>(dy.size(), 0.0f)), again_lse(rows), again_d_qkv(sevens),
              again_scratch(rows);
          fast.attention_forward(again_out.get(), again_lse.get(), gqkv.get(), B, T, C, H, device_mask);
          fast.attention_backward(again_d_qkv.get(), again_scratch.get(), gdy.get(), gqkv.get(), again_out.get(),
                                  again_lse.get(), B, T, C, H, device_mask);
          COMPARE_EXACT(what + "out again", again_out.host(), got_out);
          COMPARE_EXACT(what + "d_qkv again", again_d_qkv.host(), got_d_qkv);
        }
      }
    }
  }
}

QTEST_GUILESS_MAIN(TestCudaAttention)
#include "test_cuda_attention.moc"
