// SPDX-License-Identifier: GPL-3.0-or-later
// Ring attention's block ops (context parallelism, ops/ring_attention.h) on the
// CUDA backend against the CPU backend: a rank's queries against every block
// of a cp 2 and cp 4 ring in turn, merged by log-sum-exp, for causal GPT
// (zig-zag and contiguous) and BERT's padding mask; then backward's dQ and the
// blocks' dK, dV; D = rowsum(dY o Y); the key/value column copies. Where no GPU
// is usable, every test is skipped with "skipped: no GPU (<reason>)".
// Tolerances: kAttention (1e-4 + 1e-4 |x|): the same per-row math, the GPU's
// expf/logf within a few ulps of the host's.
#include <cuda_runtime.h>

#include <QTest>
#include <string>
#include <vector>

#include "engine/test_support.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

class TestCudaRingAttention : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void ring_blocks_forward_and_backward();
  void row_dot_and_column_copies();
};

void TestCudaRingAttention::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
}

// Rank `rank` of the ring: every block (owners rank, rank - 1, ...) merged into
// out and lse forward, then dQ set on the first block and added after, and
// each block's dK, dV added into its own accumulator, as the model runs them.
void TestCudaRingAttention::ring_blocks_forward_and_backward() {
  const int B = 2, T = 8, H = 2, C = 32;
  struct Case {
    const char* name;
    int cp, rank;
    bool zigzag, causal, padded;
  };
  for (const Case c :
       {Case{"cp 2 zigzag causal", 2, 1, true, true, false}, Case{"cp 4 contiguous causal", 4, 2, false, true, false},
        Case{"cp 4 zigzag causal", 4, 0, true, true, false}, Case{"cp 2 padding", 2, 0, false, false, true}}) {
    const QString what = QString(c.name) + " ";
    const auto qkv = randoms(static_cast<std::size_t>(B * T * 3 * C), 60);
    const auto dy = randoms(static_cast<std::size_t>(B * T * C), 61);
    std::vector<std::int32_t> padding(static_cast<std::size_t>(B * T * c.cp), 1);
    for (int t = 0; t < T * c.cp; t += 3) padding[static_cast<std::size_t>(t)] = 0;          // sequence 0: holes
    for (int t = T; t < T * c.cp; ++t) padding[static_cast<std::size_t>(T * c.cp + t)] = 0;  // sequence 1: a tail
    DeviceArray gqkv(qkv), gdy(dy);
    DeviceArray gpad(padding);
    std::vector<std::vector<float>> blocks;
    for (int owner = 0; owner < c.cp; ++owner)
      blocks.push_back(randoms(static_cast<std::size_t>(B * T * 2 * C), 70 + owner));
    std::vector<float> out(static_cast<std::size_t>(B * T * C), 0.0f),
        lse(static_cast<std::size_t>(B * H * T), -INFINITY);
    DeviceArray gout(out), glse(lse);
    const auto block_of = [&](int owner, bool on_gpu) {
      RingAttentionBlock k;
      k.B = B, k.T = T, k.C = C, k.H = H, k.rank = c.rank, k.owner = owner, k.cp = c.cp;
      k.zigzag = c.zigzag, k.causal = c.causal;
      k.padding = c.padded ? (on_gpu ? gpad.get() : padding.data()) : nullptr;
      return k;
    };
    std::vector<std::unique_ptr<DeviceArray<float>>> gblocks;
    for (int step = 0; step < c.cp; ++step) {
      const int owner = (c.rank - step + c.cp) % c.cp;
      gblocks.push_back(std::make_unique<DeviceArray<float>>(blocks[static_cast<std::size_t>(owner)]));
      gpu->ring_attention_forward(gout.get(), glse.get(), gqkv.get(), gblocks.back()->get(), block_of(owner, true));
      cpu->ring_attention_forward(out.data(), lse.data(), qkv.data(), blocks[static_cast<std::size_t>(owner)].data(),
                                  block_of(owner, false));
    }
    COMPARE_NEAR(what + "lse", glse.host(), lse, kAttention);
    COMPARE_NEAR(what + "out", gout.host(), out, kAttention);

    std::vector<float> row_dot(lse.size());
    cpu->attention_row_dot(row_dot.data(), dy.data(), out.data(), B, T, C, H);
    DeviceArray grow_dot(row_dot), glse_cpu(lse);  // both sides backward from the CPU's forward
    auto d_qkv = randoms(qkv.size(), 62);          // dQ set by the first block; dK, dV columns untouched
    DeviceArray gd_qkv(d_qkv);
    for (int step = 0; step < c.cp; ++step) {
      const int owner = (c.rank - step + c.cp) % c.cp;
      std::vector<float> d_kv = randoms(static_cast<std::size_t>(B * T * 2 * C), 80 + owner);  // added to
      DeviceArray gd_kv(d_kv);
      gpu->ring_attention_backward(gd_qkv.get(), gd_kv.get(), gdy.get(), gqkv.get(), gblocks[step]->get(),
                                   glse_cpu.get(), grow_dot.get(), step == 0, block_of(owner, true));
      cpu->ring_attention_backward(d_qkv.data(), d_kv.data(), dy.data(), qkv.data(),
                                   blocks[static_cast<std::size_t>(owner)].data(), lse.data(), row_dot.data(),
                                   step == 0, block_of(owner, false));
      COMPARE_NEAR(what + QString("d_kv of block %1").arg(owner), gd_kv.host(), d_kv, kAttention);
    }
    COMPARE_NEAR(what + "d_qkv", gd_qkv.host(), d_qkv, kAttention);
  }
}

void TestCudaRingAttention::row_dot_and_column_copies() {
  const int B = 3, T = 5, H = 4, C = 32;
  const auto dy = randoms(static_cast<std::size_t>(B * T * C), 90), out = randoms(dy.size(), 91);
  std::vector<float> row_dot(static_cast<std::size_t>(B * H * T));
  DeviceArray gdy(dy), gout(out), grow_dot(row_dot);
  gpu->attention_row_dot(grow_dot.get(), gdy.get(), gout.get(), B, T, C, H);
  cpu->attention_row_dot(row_dot.data(), dy.data(), out.data(), B, T, C, H);
  COMPARE_NEAR(QString("row_dot"), grow_dot.host(), row_dot, kRow);

  const auto qkv = randoms(static_cast<std::size_t>(B * T * 3 * C), 92);
  std::vector<float> kv(static_cast<std::size_t>(B * T * 2 * C));
  DeviceArray gqkv(qkv), gkv(kv);
  gpu->copy_columns(gkv.get(), 2 * C, gqkv.get() + C, 3 * C, B * T, 2 * C);
  cpu->copy_columns(kv.data(), 2 * C, qkv.data() + C, 3 * C, B * T, 2 * C);
  QCOMPARE(gkv.host(), kv);  // a copy: bit for bit
  QCOMPARE(kv[2 * C + 1], qkv[3 * C + C + 1]);
}

QTEST_GUILESS_MAIN(TestCudaRingAttention)
#include "test_cuda_ring_attention.moc"
