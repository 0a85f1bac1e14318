// SPDX-License-Identifier: GPL-3.0-or-later
// Two inputs of the kernel time model that published runs state: the attention kernel written in
// Triton (--attention triton, llm-foundry's attn_impl "triton") and FSDP's fp32 gradient reduction
// (--reduce-dtype fp32, PyTorch FSDP's MixedPrecision(reduce_dtype=torch.float32)).
#include <QTest>
#include <cmath>

#include "clock/attention_kernel.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "estimate_fixtures.h"
#include "io/hf_config.h"

using namespace shardscope;
using test::llama_8b;
using test::near;

namespace {

// 8 GPUs, bf16, 2 × 8192 tokens a micro-batch, 3 micro-batches a step, the fused attention kernel.
EstimateSettings eight_gpus() {
  EstimateSettings s = test::torchtitan_settings();
  s.accum = 3;
  return s;
}

}  // namespace

class TestEstimatePublishedInputs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void triton_attention_at_the_papers_ratios();
  void fp32_reduce_doubles_the_reduce_scatter_and_casts();
  void fp32_reduce_refused_without_zero();
};

// FlashAttention-2, section 4.1: around 1.3-1.5 times faster than FlashAttention in Triton forward, 2 times
// backward. The Triton kernel takes the flash kernels' seconds times those ratios, and nothing else moves.
void TestEstimatePublishedInputs::triton_attention_at_the_papers_ratios() {
  const ModelShape llama = llama_8b();
  for (const char* gpu : {"H100", "A100-80GB", "MI300X"}) {
    EstimateSettings s = eight_gpus();
    const GpuProfile& profile = find_gpu_profile(gpu);
    const TimeEstimate flash = estimate_time(llama, s, &profile);
    s.triton_attention = true;
    validate_estimate_settings(s);
    const TimeEstimate triton = estimate_time(llama, s, &profile);
    // Forward and backward apart: the forward alone again under full recompute.
    s.recompute = Recompute::full;
    const TimeEstimate triton_full = estimate_time(llama, s, &profile);
    s.triton_attention = false;
    const TimeEstimate flash_full = estimate_time(llama, s, &profile);
    const double forward = flash_full.attention_s - flash.attention_s, backward = flash.attention_s - forward;
    QVERIFY(forward > 0 && backward > forward);
    QVERIFY2(near(triton.attention_s, 1.4 * forward + 2.0 * backward), gpu);
    QVERIFY2(near(triton_full.attention_s - triton.attention_s, 1.4 * forward), gpu);
    QCOMPARE(triton.gemm_s, flash.gemm_s);
    QCOMPARE(triton.memory_bound_s, flash.memory_bound_s);
    QCOMPARE(triton.attention_fraction, flash.attention_fraction);
    QVERIFY(triton.step_s > flash.step_s);
  }
  QCOMPARE(triton_forward_slowdown, 1.4);
  QCOMPARE(triton_backward_slowdown, 2.0);
  // The same memory as flash: the scores are not kept.
  EstimateSettings s = eight_gpus();
  const std::int64_t flash_peak = estimate_memory(llama, s).ranks.front().total();
  s.triton_attention = true;
  QCOMPARE(estimate_memory(llama, s).ranks.front().total(), flash_peak);
}

// ZeRO-3 and ZeRO-2 reduce-scatter every micro-step, ZeRO-1 once a step: with fp32 reduction each of those
// moves 4 bytes a gradient value where it moved 2 (the gathers stay 2), and a cast pass reads 2 bytes and
// writes 4 per parameter before each, at the memory-bound kernels' bandwidth.
void TestEstimatePublishedInputs::fp32_reduce_doubles_the_reduce_scatter_and_casts() {
  const ModelShape llama = llama_8b();
  const GpuProfile& h100 = find_gpu_profile("H100");
  const double P = static_cast<double>(llama.parameters());
  for (int zero : {1, 2, 3}) {
    EstimateSettings s = eight_gpus();
    s.zero_stage = zero;
    const TimeEstimate bf16 = estimate_time(llama, s, &h100);
    s.fp32_reduce = true;
    validate_estimate_settings(s);
    const TimeEstimate fp32 = estimate_time(llama, s, &h100);
    const double reductions = zero == 1 ? 1 : 3;
    // The reduce-scatter's bytes: R(N−1)/N · gΨ' at g = 2, doubled.
    const double reduce_16 = bf16.dp_bytes - bf16.dp_gather_bytes;
    const double gathers = zero == 3 ? 2 * reductions : 1;                    // ZeRO-3: two gathers per micro-step
    const double psi_share = bf16.dp_bytes / (2 * gathers + 2 * reductions);  // (N−1)/N · Ψ'
    QVERIFY2(near(fp32.dp_bytes - bf16.dp_bytes, reductions * 2 * psi_share), std::to_string(zero).c_str());
    QVERIFY(psi_share > 7.0 / 8 * P * 0.99 && psi_share < 7.0 / 8 * P * 1.01);
    QCOMPARE(fp32.dp_gather_bytes, bf16.dp_gather_bytes);
    if (zero < 3) QVERIFY(near(fp32.dp_bytes - fp32.dp_gather_bytes, 2 * reduce_16));
    // The cast: 6 bytes a parameter per reduction, memory-bound.
    const double cast_s = reductions * 6 * P / (3350e9 * fp32.memory_fraction);
    QVERIFY2(std::abs((fp32.memory_bound_s - bf16.memory_bound_s) / cast_s - 1) < 1e-9, std::to_string(zero).c_str());
    QCOMPARE(fp32.gemm_s, bf16.gemm_s);
  }
  // Gradients already fp32 (fp32 training): nothing to cast, the same bytes.
  EstimateSettings s = eight_gpus();
  s.zero_stage = 3;
  s.precision = Precision::fp32;
  const TimeEstimate fp32_training = estimate_time(llama, s, &h100);
  s.fp32_reduce = true;
  const TimeEstimate again = estimate_time(llama, s, &h100);
  QCOMPARE(again.dp_bytes, fp32_training.dp_bytes);
  QCOMPARE(again.memory_bound_s, fp32_training.memory_bound_s);
}

// DDP all-reduces the gradients in the precision backward made them: the flag names ZeRO and is refused.
void TestEstimatePublishedInputs::fp32_reduce_refused_without_zero() {
  EstimateSettings s = eight_gpus();
  s.fp32_reduce = true;
  try {
    validate_estimate_settings(s);
    QFAIL("fp32 reduction accepted under DDP");
  } catch (const FieldError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("reduce_dtype") != std::string::npos || what.find("reduce-dtype") != std::string::npos,
             e.what());
    QVERIFY2(what.find("zero") != std::string::npos, e.what());
  }
  s.zero_stage = 2;
  validate_estimate_settings(s);
}

QTEST_GUILESS_MAIN(TestEstimatePublishedInputs)
#include "test_estimate_published_inputs.moc"
