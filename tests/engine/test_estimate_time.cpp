// SPDX-License-Identifier: GPL-3.0-or-later
// The estimator's time model: FLOPs and bytes per step, throughput and MFU, the
// measured kernel model's parts (with the sustained clock and the exposed
// data-parallel traffic), and every GPU profile's datasheet shape. Its
// predictions of published runs: bench/run_published_runs.sh.
#include <QTest>
#include <cmath>

#include "clock/kernel_model.h"
#include "clock/sustained_clock.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "estimate/formula_text.h"
#include "estimate/step_kernels.h"
#include "estimate_fixtures.h"
#include "io/hf_config.h"

using namespace shardscope;
using test::llama_8b;
using test::near;
using test::torchtitan_settings;

namespace {

ModelShape preset(const char* name) {
  return model_shape_from_config(find_model_preset(name), name);
}

}  // namespace

class TestEstimateTime : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void time_model_figures();
  void throughput_and_mfu();
  void measured_kernels_time_each_part();
  void kernel_model_sustained_clock_and_exposed_traffic();
  void gpu_profiles_from_datasheets();
  void flash_attention_causal_at_its_measured_rate();
  void runtime_recompute_policy_dropout_and_bandwidth();
  void float8_linears_at_the_fp8_peak();
  void float8_all_gather_shortens_only_the_gather();
  void float8_refused_for_experts();
};

void TestEstimateTime::time_model_figures() {
  EstimateSettings s;
  s.measured_kernels = false;  // the flat model's compute_s (the kernel model's: measured_kernels_time_each_part)
  s.layout[Axis::dp] = 8;
  s.micro_batch_size = 4;
  s.seq = 1024;
  const ModelShape gpt2 = preset("gpt2-124m");
  TimeEstimate t = estimate_time(gpt2, s, &find_gpu_profile("H100"));
  // N = Ψ − position embeddings = 124,439,808 − 1024 × 768; 6N + 12·L·h·s per token.
  QCOMPARE(t.matmul_parameters, std::int64_t{123'653'376});
  QCOMPARE(t.flops_per_token, 6.0 * 123'653'376 + 12.0 * 12 * 768 * 1024);
  QCOMPARE(t.tokens_per_step, std::int64_t{8 * 4 * 1024});
  QCOMPARE(t.dp_bytes, 2.0 * 7 / 8 * 4 * 124'439'808);  // ring all-reduce of fp32 gradients
  QVERIFY(t.has_gpu && t.step_s > 0 && t.step_overlapped_s <= t.step_s);
  QCOMPARE(t.compute_s, t.flops_per_step / 8 / (67e12 * 0.5));
  s.zero_stage = 3;
  s.accum = 2;
  t = estimate_time(gpt2, s, nullptr);
  // 1.5× DDP per micro-step, and the tied embeddings (50,257 + 1,024) × 768 gathered once more for the head.
  QCOMPARE(t.dp_bytes, 2 * (7.0 / 8) * ((2 * 4 + 4) * 124'439'808.0 + 4 * 39'383'808.0));
  QVERIFY(!t.has_gpu);
  EstimateSettings pipe;
  pipe.layout[Axis::pp] = 4;
  pipe.micro_batches = 8;
  t = estimate_time(gpt2, pipe, nullptr);
  QCOMPARE(t.bubble_fraction, 3.0 / 11.0);  // (p − 1)/(m + p − 1)
  QCOMPARE(t.bubble_fraction, gpipe_bubble_fraction(4, 8));
}

// tokens/s per GPU, TFLOP/s run per GPU and MFU all follow from step_s; with full recompute MFU counts
// 6N + 12·L·h·s, not the 8N + 16·L·h·s that runs.
void TestEstimateTime::throughput_and_mfu() {
  EstimateSettings s;
  s.layout[Axis::dp] = 8;
  s.micro_batch_size = 4;
  s.seq = 1024;
  s.precision = Precision::bf16;
  const ModelShape gpt2 = preset("gpt2-124m");
  const GpuProfile& h100 = find_gpu_profile("H100");
  TimeEstimate t = estimate_time(gpt2, s, &h100);
  const double model_flops = 6.0 * 123'653'376 + 12.0 * 12 * 768 * 1024;
  QCOMPARE(t.model_flops_per_token, model_flops);
  QCOMPARE(t.tokens_per_s_per_gpu, t.tokens_per_s / 8);
  QCOMPARE(t.tflops_per_gpu, t.flops_per_step / 8 / t.step_s / 1e12);
  QCOMPARE(t.mfu, model_flops * t.tokens_per_s_per_gpu / 989.4e12);
  // Under either model, `efficiency` is the fraction of peak compute reaches (the flat model's 0.5).
  QVERIFY(t.mfu < t.efficiency);  // communication and the optimizer come on top of compute
  QCOMPARE(t.mfu, t.efficiency * t.compute_s / t.step_s);
  s.recompute = Recompute::full;
  t = estimate_time(gpt2, s, &h100);
  QCOMPARE(t.model_flops_per_token, model_flops);
  QVERIFY(t.flops_per_token > t.model_flops_per_token);
  QCOMPARE(t.mfu, t.efficiency * t.compute_s / t.step_s * model_flops / t.flops_per_token);
  s.measured_kernels = false;
  QCOMPARE(estimate_time(gpt2, s, &h100).efficiency, 0.5);
}

// The measured kernel model (estimate --time-model kernels): compute is the sum of its
// parts; flash attention is faster than the materialized scores; small GEMMs pay the floor;
// the step's FLOPs reach less of peak than the model's largest GEMM (0.82).
void TestEstimateTime::measured_kernels_time_each_part() {
  EstimateSettings s;
  s.layout[Axis::dp] = 8;
  s.micro_batch_size = 4;
  s.seq = 1024;
  s.precision = Precision::bf16;
  s.activations = ActivationMode::formula;
  s.measured_kernels = true;
  const ModelShape gpt2 = preset("gpt2-124m");
  const GpuProfile& h100 = find_gpu_profile("H100");
  const TimeEstimate t = estimate_time(gpt2, s, &h100);
  QVERIFY(t.measured_kernels && t.gemm_s > 0 && t.attention_s > 0 && t.memory_bound_s > 0);
  QCOMPARE(t.compute_s, t.gemm_s + t.attention_s + t.memory_bound_s);
  QVERIFY(t.efficiency > 0.2 && t.efficiency < t.gemm_fraction);
  QCOMPARE(t.mfu, t.model_flops_per_token * t.tokens_per_s_per_gpu / 989.4e12);
  // 12 layers × (4 weight GEMMs × 3 + 2 + 4 attention GEMMs) + the head's 3, one micro-batch.
  QCOMPARE(t.gemm_kernels, 12.0 * (12 + 6) + 3);
  QVERIFY(t.gemm_s > t.gemm_kernels * t.gemm_floor_s);
  s.flash_attention = true;
  const TimeEstimate flash = estimate_time(gpt2, s, &h100);
  QVERIFY(flash.attention_s < t.attention_s);
  QCOMPARE(flash.gemm_s, t.gemm_s);
  // --efficiency X: the flat assumption again.
  s.measured_kernels = false;
  QCOMPARE(estimate_time(gpt2, s, &h100).compute_s, t.flops_per_step / 8 / (989.4e12 * 0.5));
}

// The kernel model's two added terms. The sustained clock slows the GEMMs' FLOPs only: an
// H100 at 1575 of 1980 MHz, an A100 at 1305 of 1410, a profile without a measurement at 1.
// The data-parallel traffic shows only where compute cannot hide it: all of it under naive
// DataParallel, one layer's share when compute is longer (ZeRO-3 and DDP alike), ZeRO-1's
// all-gather after the step, the excess over backward when the traffic is longer than it (DDP
// over 100 Gb Ethernet). An A100 node's
// collectives run at NCCL's measured bus bandwidth.
void TestEstimateTime::kernel_model_sustained_clock_and_exposed_traffic() {
  EstimateSettings s;
  s.layout[Axis::dp] = 8;
  s.micro_batch_size = 4;
  s.seq = 1024;
  s.precision = Precision::bf16;
  s.activations = ActivationMode::formula;
  s.measured_kernels = true;
  const ModelShape gpt2 = preset("gpt2-124m");
  QCOMPARE(estimate_time(gpt2, s, &find_gpu_profile("H100")).sustained_clock, 1575.0 / 1980);
  QCOMPARE(estimate_time(gpt2, s, &find_gpu_profile("A100-80GB")).sustained_clock, 1305.0 / 1410);
  QCOMPARE(estimate_time(gpt2, s, &find_gpu_profile("MI300X")).sustained_clock, 1.0);
  const GpuProfile& h100 = find_gpu_profile("H100");
  for (const int zero : {0, 3}) {
    s.zero_stage = zero;
    const TimeEstimate t = estimate_time(gpt2, s, &h100);
    QVERIFY(t.dp_comm_s > 0 && t.dp_comm_s < t.compute_s * 2 / 3);
    QCOMPARE(t.dp_exposed_s, t.dp_comm_s / 12);
    QCOMPARE(t.step_s, t.compute_s + t.bubble_s + t.optimizer_s + t.dp_exposed_s + t.pp_comm_s);
  }
  // ZeRO-1: the all-gather of the updated shards (half the bytes in bf16: p = g) waits for the step.
  s.zero_stage = 1;
  const TimeEstimate zero1 = estimate_time(gpt2, s, &h100);
  QCOMPARE(zero1.dp_exposed_s, zero1.dp_comm_s / 2 + zero1.dp_comm_s / 2 / 12);
  s.zero_stage = 0;
  s.dp_mode = DataParallelMode::naive;
  const TimeEstimate naive = estimate_time(gpt2, s, &h100);
  QCOMPARE(naive.dp_exposed_s, naive.dp_comm_s);
  s.dp_mode = DataParallelMode::ddp;
  s.micro_batch_size = 1;
  s.seq = 128;
  const TimeEstimate slow = estimate_time(gpt2, s, &find_gpu_profile("RTX4090"));
  QVERIFY(slow.dp_comm_s > slow.compute_s);
  QCOMPARE(slow.dp_exposed_s, slow.dp_comm_s - slow.compute_s * 2 / 3);
  s.measured_kernels = false;  // the flat model counts every byte
  const TimeEstimate flat = estimate_time(gpt2, s, &find_gpu_profile("RTX4090"));
  QCOMPARE(flat.dp_exposed_s, flat.dp_comm_s);
  // An A100 node's all-reduces at the 200 GB/s nccl-tests measures, under the kernel model only.
  s.layout[Axis::dp] = 1;
  s.layout[Axis::tp] = 4;
  const GpuProfile& a100 = find_gpu_profile("A100-80GB");
  QCOMPARE(estimate_time(gpt2, s, &a100).tp_comm_s, estimate_time(gpt2, s, &a100).tp_bytes / 300e9);
  s.measured_kernels = true;
  const TimeEstimate tp = estimate_time(gpt2, s, &a100);
  QCOMPARE(tp.tp_comm_s, tp.tp_bytes / 200e9);
  QVERIFY(tp.tp_link.find("200 GB/s measured by nccl-tests") != std::string::npos);
}

// Every profile has its datasheet's shape: tensor cores at least as fast as fp32, a link and a
// network; "H100" stays the SXM part, and the PCIe card is slower everywhere.
void TestEstimateTime::gpu_profiles_from_datasheets() {
  for (const char* name : {"A100-40GB", "A100-80GB", "H100", "H100-PCIe", "H200", "B200", "RTX4090", "MI300X"}) {
    const GpuProfile& g = find_gpu_profile(name);
    QVERIFY2(g.memory_bytes > 0 && g.fp32_tflops > 0 && g.tf32_tflops >= g.fp32_tflops / 2, name);
    QVERIFY2(g.fp16_tflops >= g.tf32_tflops && g.memory_gbps > 0, name);
    QVERIFY2(g.link_gbps > 0 && !g.link.empty() && g.internode_gbps > 0 && !g.internode.empty(), name);
  }
  const GpuProfile& sxm = find_gpu_profile("H100");
  const GpuProfile& pcie = find_gpu_profile("h100 pcie");
  QCOMPARE(sxm.description, std::string("NVIDIA H100 SXM5 80GB"));
  QVERIFY(pcie.fp16_tflops < sxm.fp16_tflops && pcie.memory_gbps < sxm.memory_gbps && pcie.link_gbps < sxm.link_gbps);
  QCOMPARE(find_gpu_profile("B200").fp16_tflops, 2250.0);
  QCOMPARE(find_gpu_profile("MI300X").fp16_tflops, 1307.4);
}

// FlashAttention under a causal mask computes half the s × s blocks, at FlashAttention-2's own
// measured rate (335 of 989.4 TFLOP/s on an H100, 230 of 312 on an A100; the GEMMs' fraction
// where the paper has no figure, and in fp32); a bidirectional encoder (BERT) computes them all.
void TestEstimateTime::flash_attention_causal_at_its_measured_rate() {
  EstimateSettings s = torchtitan_settings();
  const ModelShape llama = llama_8b();
  const GpuProfile& h100 = find_gpu_profile("H100");
  const TimeEstimate causal = estimate_time(llama, s, &h100);
  QCOMPARE(causal.attention_fraction, 335.0 / 989.4);
  QCOMPARE(estimate_time(llama, s, &find_gpu_profile("A100-80GB")).attention_fraction, 230.0 / 312);
  QCOMPARE(estimate_time(llama, s, &find_gpu_profile("MI300X")).attention_fraction, 0.0);
  ModelShape encoder = llama;
  encoder.architecture = "bert";
  const TimeEstimate full = estimate_time(encoder, s, &h100);
  // Each kernel pays its floor once; the FLOPs halve (they dwarf the bytes at s = 8192).
  const double floors = 32 * 3 * causal.gemm_floor_s;
  QVERIFY(std::abs((causal.attention_s - floors) / (full.attention_s - floors) - 0.5) < 1e-3);
  // 2 × 8192 tokens, 32 heads of 128: 14·s²·hd per head forward and backward, halved, at 335 × 1575/1980.
  const double flops = 32 * 0.5 * 14 * 2 * 32 * 8192.0 * 8192 * 128;
  QVERIFY(std::abs(causal.attention_s - floors - flops / (335e12 * 1575 / 1980)) < 1e-3 * causal.attention_s);
  // The model FLOPs (MFU's numerator) still count the whole 12·L·h·s, as the published figures do.
  QCOMPARE(causal.model_flops_per_token, full.model_flops_per_token);
  s.precision = Precision::fp32;
  QCOMPARE(estimate_time(llama, s, &h100).attention_fraction, 0.0);
}

// The run's own configuration as inputs: eager PyTorch's memory-bound ops (several times the fused
// bytes; AdamW in 80 bytes per parameter, not 28), torchtitan's op policy (every second matmul
// again, the attention kernel's output kept, refused without --checkpoint selective), dropout's
// mask passes, PyTorch AMP's casts, the run's memory bandwidth, ZeRO-3's buffer copies, and a
// pipeline's last stage holding the whole head.
void TestEstimateTime::runtime_recompute_policy_dropout_and_bandwidth() {
  EstimateSettings s = torchtitan_settings();
  const ModelShape llama = llama_8b();
  const GpuProfile& h100 = find_gpu_profile("H100");
  const TimeEstimate fused = estimate_time(llama, s, &h100);
  s.eager_runtime = true;
  const TimeEstimate eager = estimate_time(llama, s, &h100);
  QVERIFY(eager.memory_bound_s > 3 * fused.memory_bound_s);
  QCOMPARE(eager.gemm_s, fused.gemm_s);
  QCOMPARE(eager.optimizer_s / fused.optimizer_s, 80.0 / 28);
  s.recompute = Recompute::selective;
  const TimeEstimate core = estimate_time(llama, s, &h100);
  s.selective_every_second_matmul = true;
  const TimeEstimate op = estimate_time(llama, s, &h100);
  QCOMPARE(op.attention_s, eager.attention_s);
  QVERIFY(core.attention_s > eager.attention_s && op.gemm_s > core.gemm_s);
  QCOMPARE(core.memory_bound_s, eager.memory_bound_s);  // the op policy runs the memory-bound forward again
  QVERIFY(op.memory_bound_s > core.memory_bound_s);
  // wk (4096 × 1024), wo (4096²) and w3 (4096 × 14336) recomputed: 2 FLOPs per parameter per token
  // (the k width read from the layer's parameter count, its two norms' 2h among them: within 1e-4).
  const double again = every_second_matmul_parameters(llama, s);
  QVERIFY(std::abs(again / (4096.0 * (1024 + 4096 + 14336)) - 1) < 1e-4);
  QVERIFY(near(op.flops_per_token,
               6.0 * static_cast<double>(op.matmul_parameters) + 2 * 32 * again + 12 * 32 * 4096.0 * 8192));
  s.recompute = Recompute::none;
  QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
  s.selective_every_second_matmul = false;
  s.dropout = 0.1;  // flash keeps its dropout inside the kernel: only the hidden dropouts' masks
  const TimeEstimate dropped = estimate_time(llama, s, &h100);
  QCOMPARE(dropped.attention_s, eager.attention_s);
  QVERIFY(dropped.memory_bound_s > eager.memory_bound_s);
  s.dropout = 0;
  // PyTorch AMP: one micro-step casts the weights to 16 bits and their gradients back, 12 bytes a parameter.
  s.autocast = true;
  const TimeEstimate amp = estimate_time(llama, s, &h100);
  QVERIFY(near(amp.memory_bound_s - eager.memory_bound_s,
               12.0 * static_cast<double>(llama.parameters()) / (3350e9 * amp.memory_fraction)));
  s.autocast = false;
  s.memory_gbps = 2400;
  const TimeEstimate hbm2e = estimate_time(llama, s, &h100);
  QCOMPARE(hbm2e.memory_gbps, 2400.0);
  QVERIFY(near(hbm2e.memory_bound_s, eager.memory_bound_s * 3350 / 2400));
  s.zero_stage = 3;
  QVERIFY(estimate_time(llama, s, &h100).memory_bound_s > hbm2e.memory_bound_s);
  // Two pipeline stages: half the layers, all of the head.
  s.zero_stage = 0;
  s.layout[Axis::dp] = 4;
  s.layout[Axis::pp] = 2;
  const TimeEstimate staged = estimate_time(llama, s, &h100);
  QVERIFY(staged.gemm_s > hbm2e.gemm_s / 2 && staged.gemm_s < hbm2e.gemm_s);
  QCOMPARE(staged.gemm_kernels, (32 / 2) * (12.0 + 1 + 2) + 3);
  // --network-bandwidth: the run's own network between nodes (BLOOM's 4 × 100 Gb/s for 8 GPUs). With 4 GPUs a
  // node the pipeline's sends and the data-parallel ring leave the node and take its time; tp stays inside.
  s.gpus_per_node = 4;
  s.layout[Axis::tp] = 2;
  s.layout[Axis::dp] = 4;
  const TimeEstimate profile_network = estimate_time(llama, s, &h100);
  s.network_gbps = 6.25;
  const TimeEstimate slow_network = estimate_time(llama, s, &h100);
  QCOMPARE(slow_network.pp_comm_s, slow_network.pp_bytes / 6.25e9);
  QCOMPARE(slow_network.dp_comm_s, slow_network.dp_bytes / 6.25e9);
  QVERIFY(slow_network.pp_link.find("6.25 GB/s per GPU (--network-bandwidth)") != std::string::npos);
  QVERIFY(near(profile_network.pp_comm_s * h100.internode_gbps, slow_network.pp_comm_s * 6.25));
  QCOMPARE(slow_network.tp_comm_s, profile_network.tp_comm_s);
  QCOMPARE(slow_network.gemm_s, profile_network.gemm_s);
  QVERIFY(slow_network.step_s > profile_network.step_s);
}

// --float8 tensorwise: the layers' linears' GEMMs at the GPU's FP8 peak and DeepGEMM's measured fraction
// (the same floor, memory fraction and sustained clock), their casts as memory-bound passes, FSDP's FP8
// all-gather one byte a linear weight; the attention core stays 16-bit; refused on an A100, in fp32,
// under the flat model and (the all-gather) without sharded parameters (ZeRO 0).
void TestEstimateTime::float8_linears_at_the_fp8_peak() {
  // DeepGEMM's 4096 × 7168 × 16384 at 1358 TFLOP/s, less the floor, of 1978.9.
  QVERIFY(float8_gemm_fraction() > 0.69 && float8_gemm_fraction() < 0.695);
  const GpuProfile& h100 = find_gpu_profile("H100");
  QCOMPARE(h100.fp8_tflops, 1978.9);
  // One compute-bound linear, w1 of Llama 8B at 2 × 8192 tokens, FP8 against 16-bit on an H100: the
  // FLOPs' part follows the peaks and the fractions, both at the sustained clock.
  const KernelModel bf16 = sustained_kernel_model("H100", h100.fp16_tflops, h100.memory_gbps);
  const KernelModel fp8 = sustained_float8_kernel_model("H100", h100.fp8_tflops, h100.memory_gbps);
  const double m = 16384, n = 14336, k = 4096, flops = 2 * m * n * k;
  const double t16 = bf16.gemm_s(flops, 2 * (m * k + k * n + m * n)), t8 = fp8.gemm_s(flops, m * k + k * n + 2 * m * n);
  QVERIFY(near((t16 - bf16.gemm_floor_s) / (t8 - fp8.gemm_floor_s),
               1978.9 * float8_gemm_fraction() / (989.4 * bf16.gemm_fraction)));
  QCOMPARE(fp8.gemm_floor_s, bf16.gemm_floor_s);
  QCOMPARE(fp8.memory_fraction, bf16.memory_fraction);

  EstimateSettings s = torchtitan_settings();
  const ModelShape llama = llama_8b();
  const TimeEstimate sixteen = estimate_time(llama, s, &h100);
  s.float8_linears = true;
  validate_estimate_settings(s);
  const TimeEstimate f8 = estimate_time(llama, s, &h100);
  QCOMPARE(f8.float8_peak_tflops, 1978.9);
  QVERIFY(f8.gemm_s < sixteen.gemm_s * 0.75 && f8.gemm_s > sixteen.gemm_s * 0.5);
  QCOMPARE(f8.attention_s, sixteen.attention_s);
  QCOMPARE(f8.gemm_kernels, sixteen.gemm_kernels);
  // The casts, per layer of 2 × 8192 tokens: each linear's input and weight forward (amax 2 + cast 3 bytes
  // a value), its output's gradient backward (5) and the three transposed copies (2).
  const double r = 16384, h = 4096, kv = 1024, f = 14336;
  const double linears[][2] = {{h, h}, {h, kv}, {h, kv}, {h, f}, {h, f}, {h, h}, {f, h}};
  double bytes = 0;
  for (const auto& [in, out] : linears)
    bytes += 5 * (r * in + in * out) + 5 * r * out + 2 * (in * out + r * out + r * in);
  const double cast_s = 32 * bytes / (3350e9 * f8.memory_fraction);
  QVERIFY(std::abs(f8.float8_cast_s / cast_s - 1) < 1e-3);  // the k width from the layer's parameters: 1025
  QVERIFY(near(f8.memory_bound_s - sixteen.memory_bound_s, f8.float8_cast_s));
  QCOMPARE(f8.mfu, f8.model_flops_per_token * f8.tokens_per_s_per_gpu / 989.4e12);  // MFU over the 16-bit peak
  // FSDP's FP8 all-gather: the linears' weights (the layers' parameters less their norms) at 1 byte, in
  // forward and backward, of the 8 ranks' 7/8.
  s.zero_stage = 3;
  const TimeEstimate gathered16 = estimate_time(llama, s, &h100);
  s.float8_all_gather = true;
  validate_estimate_settings(s);
  const TimeEstimate gathered8 = estimate_time(llama, s, &h100);
  const double linear_weights = 32.0 * (static_cast<double>(llama.layer_parameters) - 2 * h);
  QVERIFY(near(gathered16.dp_bytes - gathered8.dp_bytes, 7.0 / 8 * 2 * linear_weights));
  QVERIFY(gathered8.float8_cast_s < gathered16.float8_cast_s);  // the weights cast on their 1/8 shard
  // Refused: an A100 (no FP8 tensor cores), fp32, the flat model, the FP8 all-gather under ZeRO 0.
  try {
    estimate_time(llama, s, &find_gpu_profile("A100-80GB"));
    QFAIL("an A100 priced FP8 linears");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("--float8") != std::string::npos && what.find("A100-80GB") != std::string::npos, e.what());
  }
  EstimateSettings bad = s;
  bad.precision = Precision::fp32;
  QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(bad));
  bad = s;
  bad.measured_kernels = false;
  QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(bad));
  bad = s;
  bad.zero_stage = 0;
  QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(bad));
  // ZeRO-1 (torchtitan's FSDP under pipeline parallelism keeps the gathered weights): one gather a step.
  bad.zero_stage = 1;
  validate_estimate_settings(bad);
  bad.float8_all_gather = false;
  const TimeEstimate zero1_16 = estimate_time(llama, bad, &h100);
  bad.float8_all_gather = true;
  QVERIFY(near(zero1_16.dp_bytes - estimate_time(llama, bad, &h100).dp_bytes, 7.0 / 8 * linear_weights));
  bad.float8_linears = false;
  bad.float8_all_gather = false;
  validate_estimate_settings(bad);
}

// ZeRO-1 with --float8-all-gather: the 1-byte weights shorten the all-gather of the updated shards (exposed
// after the step) and leave the reduce-scatter (behind backward) as it was, so the exposed seconds fall by
// what the all-gather saves.
void TestEstimateTime::float8_all_gather_shortens_only_the_gather() {
  const GpuProfile& h100 = find_gpu_profile("H100");
  const ModelShape llama = llama_8b();
  EstimateSettings s = torchtitan_settings();
  s.float8_linears = true;
  s.zero_stage = 1;
  const TimeEstimate sixteen = estimate_time(llama, s, &h100);
  s.float8_all_gather = true;
  validate_estimate_settings(s);
  const TimeEstimate eight = estimate_time(llama, s, &h100);
  const double saved = sixteen.dp_bytes - eight.dp_bytes;
  QVERIFY(saved > 0);
  QVERIFY(near(eight.dp_gather_bytes, sixteen.dp_gather_bytes - saved));
  QVERIFY(near(eight.dp_bytes - eight.dp_gather_bytes, sixteen.dp_bytes - sixteen.dp_gather_bytes));
  QVERIFY(near(sixteen.dp_exposed_s - eight.dp_exposed_s, sixteen.dp_comm_s - eight.dp_comm_s));
}

// torchtitan's grouped experts are not Float8Linear, and their weights gather over dp/ep: --float8 is
// refused for a model with experts, naming the flag and the experts.
void TestEstimateTime::float8_refused_for_experts() {
  const ModelShape moe = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  EstimateSettings s = torchtitan_settings();
  s.layout[Axis::dp] = 1;
  s.seq = 64;
  s.float8_linears = true;
  try {
    estimate_memory(moe, s);
    QFAIL("FP8 linears priced for a model with experts");
  } catch (const FieldError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("--float8") != std::string::npos && what.find("experts") != std::string::npos, e.what());
  }
  s.float8_linears = false;
  estimate_memory(moe, s);
}

QTEST_GUILESS_MAIN(TestEstimateTime)
#include "test_estimate_time.moc"
