// SPDX-License-Identifier: GPL-3.0-or-later
// The FP8 casts the kernel model charges (estimate/step_kernels.cpp), counted as torchao eab345c's code
// runs them under torchtitan 9dec370: under tensor parallelism with sequence parallelism each block's
// input is cast once on its sequence shard before the all-gather (PrepareFloat8ModuleInput) and shared
// by wq, wk, wv or by w1, w3, and a row-parallel output's gradient is cast on the shard too; with FSDP's
// FP8 all-gather each weight shard is cast before every gather, forward and backward under ZeRO-3.
#include <QTest>
#include <cmath>

#include "clock/kernel_model.h"
#include "config/run_schema.h"
#include "estimate/estimate.h"
#include "estimate_fixtures.h"
#include "io/hf_config.h"

using namespace shardscope;
using test::llama_8b;

namespace {

// One micro-batch of 2 × 8192 tokens in bf16 with FP8 linears, under the kernel model.
EstimateSettings float8_settings() {
  EstimateSettings s = test::torchtitan_settings(1);
  s.float8_linears = true;
  return s;
}

// Seconds of `bytes` per layer over the step's 32 layers on an H100, at the kernel model's memory rate.
double layers_seconds(double bytes, const TimeEstimate& t) {
  return 32 * bytes / (3350e9 * t.memory_fraction);
}

bool close(double a, double b) {
  return std::abs(a / b - 1) < 1e-3;  // the k width comes from the layer's parameters: 1025 for 1024
}

constexpr double r = 16384, h = 4096, kv = 1024, f = 14336;
constexpr double cast = 2 * 2 + 1;  // a 16-bit value's amax (2 read) and scale-and-cast (2 read, 1 written)

}  // namespace

class TestEstimateFloat8Casts : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void tp_sequence_parallel_casts_each_block_input_once();
  void fsdp_casts_the_weight_shard_at_each_gather();
};

// tp 8, no data parallelism (each Float8Linear casts its own tp-local weight). Without sequence parallelism
// (Float8ColwiseParallel on a replicated input) each of wq, wk, wv, w1, w3 casts all r tokens of its
// input, and wo, w2 the gradient of all r tokens of their output. With it one cast of the block's r/t
// tokens serves wq, wk, wv (and one w1, w3), and wo's and w2's gradients are cast on r/t tokens.
void TestEstimateFloat8Casts::tp_sequence_parallel_casts_each_block_input_once() {
  const GpuProfile& h100 = find_gpu_profile("H100");
  const ModelShape llama = llama_8b();
  EstimateSettings s = float8_settings();
  const double t = 8;
  s.layout[Axis::tp] = 8;
  validate_estimate_settings(s);
  const TimeEstimate replicated = estimate_time(llama, s, &h100);
  s.sequence_parallel = true;
  validate_estimate_settings(s);
  const TimeEstimate split = estimate_time(llama, s, &h100);

  // Per layer on one rank: each linear (in, out, tp-local) casts its weight, copies weight, gradient and
  // input transposed for backward and casts its column-parallel output's gradient on all r tokens.
  const double columns[][2] = {{h, h / t}, {h, kv / t}, {h, kv / t}, {h, f / t}, {h, f / t}};
  const double rows[][2] = {{h / t, h}, {f / t, h}};
  double shared = 0;  // what both layouts cast alike
  for (const auto& [in, out] : columns) shared += cast * in * out + cast * r * out + 2 * (in * out + r * out + r * in);
  for (const auto& [in, out] : rows) shared += cast * r * in + cast * in * out + 2 * (in * out + r * out + r * in);
  const double replicated_bytes = shared + 5 * cast * r * h + 2 * cast * r * h;
  const double split_bytes = shared + 2 * cast * (r / t) * h + 2 * cast * (r / t) * h;
  QVERIFY(close(replicated.float8_cast_s, layers_seconds(replicated_bytes, replicated)));
  QVERIFY(close(split.float8_cast_s, layers_seconds(split_bytes, split)));
  // The difference alone, exactly: five input casts of r·h against two of r·h/t, two gradients' r·h against r·h/t.
  QVERIFY(std::abs(replicated.float8_cast_s - split.float8_cast_s -
                   layers_seconds(cast * r * h * (5 + 2 - 4 / t), split)) < 1e-9);
  // Sequence parallelism moves nothing else in the linears: the same GEMMs.
  QCOMPARE(split.gemm_s, replicated.gemm_s);
}

// dp 8, no tp. Without the FP8 all-gather each Float8Linear casts its gathered 16-bit weight in forward,
// once a micro-step. With it, under ZeRO-3, FSDP casts the rank's fp32 1/8 shard (4 read, 1 written) before
// the forward's gather and again before the backward's, and the amax of the shards is taken once a step
// (precompute_float8_dynamic_scale_for_fsdp, 4 read); under ZeRO-1 the shard is cast once a step.
void TestEstimateFloat8Casts::fsdp_casts_the_weight_shard_at_each_gather() {
  const GpuProfile& h100 = find_gpu_profile("H100");
  const ModelShape llama = llama_8b();
  EstimateSettings s = float8_settings();
  s.layout[Axis::dp] = 8;
  s.zero_stage = 3;
  s.accum = 4;
  validate_estimate_settings(s);
  const TimeEstimate in_forward = estimate_time(llama, s, &h100);
  s.float8_all_gather = true;
  validate_estimate_settings(s);
  const TimeEstimate zero3 = estimate_time(llama, s, &h100);
  s.zero_stage = 1;
  validate_estimate_settings(s);
  const TimeEstimate zero1 = estimate_time(llama, s, &h100);

  const double weights = h * (h + 2 * kv + 3 * f + h);  // wq, wk, wv, w1, w3, wo, w2 per layer
  const double K = 4, shard = weights / 8;
  // Per micro-step and layer, what the three count differently: the weights' casts.
  const double forward_cast = cast * weights, zero3_casts = 2 * 5 * shard + 4 * shard / K,
               zero1_casts = 5 * shard / K + 4 * shard / K;
  const double rest = in_forward.float8_cast_s - layers_seconds(K * forward_cast, in_forward);
  QVERIFY(close(zero3.float8_cast_s - rest, layers_seconds(K * zero3_casts, zero3)));
  QVERIFY(close(zero1.float8_cast_s - rest, layers_seconds(K * zero1_casts, zero1)));
  // Two gathers a micro-step cost more than the old single cast of the shard would have (5 bytes a value).
  QVERIFY(zero3.float8_cast_s - rest > layers_seconds(K * 5 * shard, zero3) * 1.9);
}

QTEST_APPLESS_MAIN(TestEstimateFloat8Casts)
#include "test_estimate_float8_casts.moc"
