// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA fused-attention kernels themselves (ops/cuda/cuda_flash_attention.cu),
// compiled as C++ and run on the CPU through tests/engine/cuda_emulation: real
// threads per block with __syncthreads as a barrier, shared memory prefilled
// with NaN bytes, wmma calls that check alignment and leading dimensions. Their
// results must match the host twin (flash_reference.h), which
// test_flash_attention checks against materialized attention. This runs the
// kernels' indexing, tiling, masking, shared-memory carving and barriers
// without a GPU; what the emulation cannot show (warp divergence around wmma,
// the hardware's own fragment layouts) is left to tests/gpu/test_cuda_attention.
#include "cuda_emulation.h"
#include "ops/cuda/cuda_flash_attention.cu"  // NOLINT(bugprone-suspicious-include): the kernels under test

#include <QTest>
#include <cmath>
#include <random>
#include <vector>

#include "engine/flash_reference.h"

using namespace shardscope;

class TestFlashKernelEmulated : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void kernels_match_the_host_twin_data();
  void kernels_match_the_host_twin();
  void shape_and_shared_memory_limits_are_enforced();
};

void TestFlashKernelEmulated::kernels_match_the_host_twin_data() {
  QTest::addColumn<int>("B");
  QTest::addColumn<int>("T");
  QTest::addColumn<int>("hd");
  QTest::addColumn<int>("H");
  QTest::addColumn<bool>("bf16");
  for (const bool bf16 : {true, false}) {
    const char* type = bf16 ? "bf16" : "fp16";
    QTest::addRow("%s T=1 hd=16", type) << 2 << 1 << 16 << 2 << bf16;
    QTest::addRow("%s T=17 hd=32", type) << 3 << 17 << 32 << 2 << bf16;
    QTest::addRow("%s T=64 hd=64", type) << 2 << 64 << 64 << 1 << bf16;
    QTest::addRow("%s T=100 hd=64 H=2", type) << 3 << 100 << 64 << 2 << bf16;
    QTest::addRow("%s T=70 hd=128", type) << 3 << 70 << 128 << 1 << bf16;
  }
}

namespace {
// Largest |a - b| / (atol + rtol |b|) over n values; 0 where both are the same infinity.
double worst(const std::vector<float>& a, const std::vector<float>& b, double atol, double rtol, std::size_t* at) {
  double w = 0.0;
  *at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) && a[i] == b[i]) continue;
    const double e = std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) != std::isinf(b[i])
                         ? 1e30
                         : std::fabs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::fabs(b[i]));
    if (e > w) {
      w = e;
      *at = i;
    }
  }
  return w;
}
}  // namespace

void TestFlashKernelEmulated::kernels_match_the_host_twin() {
  QFETCH(int, B);
  QFETCH(int, T);
  QFETCH(int, hd);
  QFETCH(int, H);
  QFETCH(bool, bf16);
  const int C = hd * H;
  const auto type = bf16 ? cuda_detail::Flash16::bf16 : cuda_detail::Flash16::fp16;
  const auto rounding = bf16 ? test::FlashRounding::bf16 : test::FlashRounding::fp16;
  std::mt19937 rng(static_cast<unsigned>(B * 1000 + T * 10 + hd));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t BT = static_cast<std::size_t>(B) * T;
  std::vector<float> qkv(BT * 3 * C), dy(BT * C);
  for (float& x : qkv) x = normal(rng);
  for (float& x : dy) x = normal(rng);
  // Padding: sequence 0 loses its tail, sequence 1 every third token, sequence 2 (if any) everything.
  std::vector<std::int32_t> padding(BT, 1);
  for (int t = 2 * T / 3; t < T; ++t) padding[static_cast<std::size_t>(t)] = 0;
  if (B > 1)
    for (int t = 1; t < T; t += 3) padding[static_cast<std::size_t>(T + t)] = 0;
  if (B > 2)
    for (int t = 0; t < T; ++t) padding[static_cast<std::size_t>(2 * T + t)] = 0;
  struct Case {
    const char* name;
    bool causal, padded;
  };
  for (const Case c : {Case{"causal", true, false}, Case{"padding", false, true}, Case{"causal+padding", true, true}}) {
    const std::int32_t* pad = c.padded ? padding.data() : nullptr;
    const AttentionMask mask{c.causal, pad};
    const QString what = QString("%1: ").arg(c.name);
    std::vector<float> out(BT * C, -7.0f), lse(static_cast<std::size_t>(B) * H * T, -7.0f);
    std::vector<float> twin_out(out.size()), twin_lse(lse.size());
    cuda_detail::flash_attention_forward(nullptr, type, out.data(), lse.data(), qkv.data(), B, T, C, H, c.causal, pad);
    test::flash_forward_reference(rounding, twin_out.data(), twin_lse.data(), qkv.data(), B, T, C, H, mask);
    std::size_t at = 0;
    double w = worst(out, twin_out, 1e-6, 1e-5, &at);
    QVERIFY2(w <= 1.0, qPrintable(what + QString("out[%1] kernel %2 twin %3").arg(at).arg(out[at]).arg(twin_out[at])));
    w = worst(lse, twin_lse, 1e-6, 1e-5, &at);
    QVERIFY2(w <= 1.0, qPrintable(what + QString("lse[%1] kernel %2 twin %3").arg(at).arg(lse[at]).arg(twin_lse[at])));

    // Both backwards start from the twin's forward: the kernel's out differs from it in the
    // last fp32 bits (another summation order), enough to flip a 16-bit rounding of dS.
    std::vector<float> d_qkv(qkv.size(), -7.0f), row_dot(lse.size()), twin_d_qkv(qkv.size());
    cuda_detail::flash_attention_backward(nullptr, type, d_qkv.data(), row_dot.data(), dy.data(), qkv.data(),
                                          twin_out.data(), twin_lse.data(), B, T, C, H, c.causal, pad);
    test::flash_backward_reference(rounding, twin_d_qkv.data(), dy.data(), qkv.data(), twin_out.data(),
                                   twin_lse.data(), B, T, C, H, mask);
    w = worst(d_qkv, twin_d_qkv, 1e-5, 1e-4, &at);
    const char* part = (at % (3 * C)) < static_cast<std::size_t>(C) ? "dQ" : (at % (3 * C)) < 2u * C ? "dK" : "dV";
    QVERIFY2(w <= 1.0, qPrintable(what + QString("d_qkv[%1] (%2, row %3) kernel %4 twin %5")
                                             .arg(at)
                                             .arg(part)
                                             .arg(at / (3 * C))
                                             .arg(d_qkv[at], 0, 'g', 9)
                                             .arg(twin_d_qkv[at], 0, 'g', 9)));
  }
}

// What the launch code refuses before a kernel runs: head dims the tiles do not
// cover, and (through cudaFuncSetAttribute) more shared memory than the GPU has.
void TestFlashKernelEmulated::shape_and_shared_memory_limits_are_enforced() {
  std::vector<float> qkv(3 * 24, 0.0f), out(24), lse(2);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                           cuda_detail::flash_attention_forward(nullptr, cuda_detail::Flash16::bf16, out.data(),
                                                                lse.data(), qkv.data(), 1, 1, 24, 1, true, nullptr));
  const std::size_t limit = cuda_emulation::max_dynamic_shared_bytes;
  cuda_emulation::max_dynamic_shared_bytes = 48 * 1024;  // hd = 128 needs about 83 KB
  std::vector<float> big(3 * 128, 0.0f), big_out(128), big_lse(1);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                           cuda_detail::flash_attention_forward(nullptr, cuda_detail::Flash16::bf16, big_out.data(),
                                                                big_lse.data(), big.data(), 1, 1, 128, 1, true,
                                                                nullptr));
  cuda_emulation::max_dynamic_shared_bytes = limit;
  cuda_detail::flash_attention_forward(nullptr, cuda_detail::Flash16::bf16, big_out.data(), big_lse.data(),
                                       big.data(), 1, 1, 128, 1, true, nullptr);
  QVERIFY(std::isfinite(big_lse[0]));
}

QTEST_GUILESS_MAIN(TestFlashKernelEmulated)
#include "test_flash_kernel_emulated.moc"
