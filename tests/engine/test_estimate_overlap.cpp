// SPDX-License-Identifier: GPL-3.0-or-later
// The kernel model's overlap inputs and the node's measured bus bandwidth: a collective hidden
// behind compute at the measured contention (clock/overlap_contention.h), --tp-comm-overlap and
// --overlap-param-gather as Megatron-LM runs them, and each collective at the bus bandwidth
// nccl-tests measures for its kind (clock/sustained_clock.h).
#include <QTest>
#include <cmath>

#include "clock/attention_kernel.h"
#include "clock/overlap_contention.h"
#include "clock/sustained_clock.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "estimate/step_kernels.h"
#include "estimate_fixtures.h"
#include "model/model_config.h"

using namespace shardscope;

namespace {

ModelShape preset(const char* name) {
  return model_shape_from_config(find_model_preset(name), name);
}

using test::near;

// GPT-2 124M on one H100 node, bf16, under the kernel model.
EstimateSettings h100_node() {
  EstimateSettings s = test::torchtitan_settings(1);  // bf16, fused attention, the kernel model
  s.micro_batch_size = 8;
  s.seq = 1024;
  return s;
}

// The distributed optimizer's layout both --overlap-param-gather tests start from: ZeRO-1 over 8, 4 micro-steps.
EstimateSettings zero1_on_eight() {
  EstimateSettings s = h100_node();
  s.layout[Axis::dp] = 8;
  s.zero_stage = 1;
  s.accum = 4;
  return s;
}

}  // namespace

class TestEstimateOverlap : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // The compute beside a collective runs (1 + σ) times as long: a short collective hides whole and
  // costs σ/(1 + σ) of itself; a long one shows past (1 + σ) × the compute; a first bucket always shows.
  void hide_collective_at_the_measured_slowdown() {
    QCOMPARE(kOverlapComputeSlowdown, 0.189);
    HiddenCollective h = hide_collective(1.0, 10.0);
    QCOMPARE(h.exposed_s, 0.0);
    QVERIFY(near(h.contention_s, 0.189 / 1.189));
    h = hide_collective(3.0, 2.0);
    QVERIFY(near(h.exposed_s, 3.0 - 2.0 * 1.189));
    QVERIFY(near(2.0 + h.contention_s + h.exposed_s, 3.0));  // the pair lasts as long as the collective
    h = hide_collective(1.0, 10.0, 0.25);
    QCOMPARE(h.exposed_s, 0.25);
    QVERIFY(near(h.contention_s, 0.75 * 0.189 / 1.189));
    h = hide_collective(0.1, 10.0, 0.25);  // a collective shorter than its first bucket shows whole
    QCOMPARE(h.exposed_s, 0.1);
    QCOMPARE(h.contention_s, 0.0);
  }

  // --tp-comm-overlap: sequence parallelism's collectives hidden behind the step's GEMMs, which pay
  // the contention; the flat model, which overlaps nothing, refuses it.
  void tp_comm_overlap_hides_behind_the_gemms() {
    const ModelShape gpt2 = preset("gpt2-124m");
    const GpuProfile& h100 = find_gpu_profile("H100");
    EstimateSettings s = h100_node();
    s.layout[Axis::tp] = 4;
    s.sequence_parallel = true;
    const TimeEstimate plain = estimate_time(gpt2, s, &h100);
    QVERIFY(plain.tp_comm_s > 0);
    QCOMPARE(plain.tp_exposed_s, plain.tp_comm_s);
    QCOMPARE(plain.overlap_contention_s, 0.0);
    s.tp_comm_overlap = true;
    validate_estimate_settings(s);
    const TimeEstimate over = estimate_time(gpt2, s, &h100);
    const HiddenCollective expect = hide_collective(plain.tp_comm_s, plain.gemm_s);
    QCOMPARE(over.tp_comm_s, plain.tp_comm_s);
    QCOMPARE(over.tp_exposed_s, expect.exposed_s);
    QVERIFY(over.overlap_contention_s > 0);
    QVERIFY(near(over.overlap_contention_s, expect.contention_s));
    QVERIFY(near(over.step_s, plain.step_s - plain.tp_comm_s + expect.exposed_s + expect.contention_s));
    // The flat model overlaps nothing, so it refuses the flag rather than ignore it.
    s.measured_kernels = false;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
    // Megatron-LM's rules: sequence parallelism, and userbuffers inside one node.
    s.measured_kernels = true;
    s.gpus_per_node = 2;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
    s.gpus_per_node = 8;
    s.sequence_parallel = false;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
  }

  // --async-tp (torchtitan's AsyncTP, PyTorch Inductor's micro-pipelined tp): at tp 8 each fused
  // collective's GEMMs run as 8 chunks of r/8 tokens, at that shape's (lower) fraction of peak; the
  // collective hides behind 7 of those chunks only, its shard's copy (all-gather) or the partials' sum
  // (reduce-scatter) stays on the critical path, and Llama's backward reduce-scatters, which follow a
  // sum of gradients and not one matmul, are not fused.
  void async_tp_hides_each_collective_behind_its_own_chunks() {
    const ModelShape llama = test::llama_8b();
    const GpuProfile& h100 = find_gpu_profile("H100");
    EstimateSettings s = test::torchtitan_settings(1);
    s.micro_batch_size = 1;  // 8192 tokens: chunks of 1024
    s.layout[Axis::tp] = 8;
    s.sequence_parallel = true;
    const TimeEstimate plain = estimate_time(llama, s, &h100);
    s.async_tp = true;
    validate_estimate_settings(s);
    const TimeEstimate async = estimate_time(llama, s, &h100);
    const KernelModel km = sustained_kernel_model("H100", h100.peak_tflops(Precision::bf16), h100.memory_gbps);
    const StepKernels k = step_kernels(llama, s, km, flash_attention_rate("H100").fraction);
    QCOMPARE(k.tp_ops.size(), std::size_t{8});
    // qkv: the model's width, q + 2 kv, and the layer's two norms as a column each (dims_of).
    const double h = 4096, chunk = 1024, q = 4096.0 / 8, qkv = (4096.0 + 2 * 1024 + 2) / 8;
    const auto gemm = [&km](double m, double n, double kk) {
      return km.gemm_s(m, n, kk, 1, 2 * (m * kk + kk * n + m * n));
    };
    // The output projection's reduce-scatter (forward): 8 GEMMs of 1024 × 4096 × 512, slower in sum
    // than the one 8192-token GEMM they replace.
    const TensorParallelOp& out = k.tp_ops[1];
    QVERIFY(!out.all_gather && out.forward && out.fused);
    QVERIFY(near(out.chunked_gemm_s, 8 * gemm(chunk, h, q)));
    QVERIFY(near(out.gemm_s, gemm(8192, h, q)));
    QVERIFY(out.chunked_gemm_s > out.gemm_s * 1.05);
    QVERIFY(near(out.bytes, 7 * chunk * h * 2));
    QVERIFY(near(out.exposed_pass_s, km.memory_s(9 * chunk * h * 2)));  // 8 partials read, one written
    // The attention's all-gather (forward): the shard's copy into the symmetric buffer shows.
    const TensorParallelOp& gather = k.tp_ops[0];
    QVERIFY(gather.all_gather && gather.fused);
    QVERIFY(near(gather.chunked_gemm_s, 8 * gemm(chunk, qkv, h)));
    QVERIFY(near(gather.exposed_pass_s, km.memory_s(2 * chunk * h * 2)));
    // Backward: Llama's input gradients of wq, wk, wv (and w1, w3) are summed before their
    // reduce-scatter, which stays a plain collective.
    QVERIFY(!k.tp_ops[6].fused && !k.tp_ops[7].fused);
    QVERIFY(k.tp_ops[4].fused && k.tp_ops[5].fused);
    // The step: the chunked GEMMs replace the whole ones; each collective hides behind 7/8 of its
    // own chunked GEMMs, at the measured contention.
    double gemm_delta = 0, exposed = 0, contention = 0, bytes = 0;
    const double seconds_per_byte = plain.tp_comm_s / plain.tp_bytes;
    for (const TensorParallelOp& op : k.tp_ops) {
      bytes += op.bytes;
      gemm_delta += op.chunked_gemm_s - op.gemm_s;
      const HiddenCollective hidden = op.fused ? hide_collective(op.bytes * seconds_per_byte, op.chunked_gemm_s * 7 / 8)
                                               : HiddenCollective{op.bytes * seconds_per_byte, 0};
      exposed += hidden.exposed_s;
      contention += hidden.contention_s;
    }
    const double layers = 32;
    QVERIFY(near(bytes * layers, plain.tp_bytes));  // the ops are the layer's whole traffic
    QVERIFY(near(async.gemm_s - plain.gemm_s, layers * gemm_delta));
    QVERIFY(near(async.tp_exposed_s, layers * exposed));
    QVERIFY(near(async.overlap_contention_s, layers * contention));
    QVERIFY(async.tp_exposed_s > 0.5 * layers * 2 * k.tp_ops[6].bytes * seconds_per_byte);
    QVERIFY(async.tp_exposed_s < plain.tp_comm_s);
    // Megatron-LM's rule would hide all of it behind the step's GEMMs: AsyncTP leaves more exposed.
    s.async_tp = false;
    s.tp_comm_overlap = true;
    QVERIFY(estimate_time(llama, s, &h100).tp_exposed_s < async.tp_exposed_s);
    // One way to overlap at a time, sequence parallelism, and symmetric memory inside one node.
    s.async_tp = true;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
    s.tp_comm_overlap = false;
    s.sequence_parallel = false;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
    s.sequence_parallel = true;
    s.gpus_per_node = 4;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
    // Inductor's pass: refused under the eager runtime, which compiles nothing.
    s.gpus_per_node = 8;
    validate_estimate_settings(s);
    s.eager_runtime = true;
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
  }

  // --overlap-param-gather: ZeRO-1's all-gather of the updated shards behind the next step's first
  // forward (a third of one micro-step's compute), one layer's bucket still exposed.
  void overlap_param_gather_behind_the_first_forward() {
    const ModelShape gpt2 = preset("gpt2-124m");
    const GpuProfile& h100 = find_gpu_profile("H100");
    EstimateSettings s = zero1_on_eight();
    const TimeEstimate plain = estimate_time(gpt2, s, &h100);
    const double gather_s = plain.dp_comm_s / 2;  // bf16: p = g, one reduce-scatter and one all-gather
    s.overlap_param_gather = true;
    validate_estimate_settings(s);
    const TimeEstimate over = estimate_time(gpt2, s, &h100);
    const HiddenCollective expect = hide_collective(gather_s, plain.compute_s / 4 / 3, gather_s / 12);
    QVERIFY(expect.exposed_s < gather_s);
    QVERIFY(near(over.dp_exposed_s, plain.dp_exposed_s - gather_s + expect.exposed_s));
    QVERIFY(near(over.overlap_contention_s, expect.contention_s));
    QVERIFY(over.step_s < plain.step_s);
    s.zero_stage = 3;  // FSDP overlaps its own gathers: the flag belongs to the distributed optimizer
    QVERIFY_THROWS_EXCEPTION(FieldError, validate_estimate_settings(s));
  }

  // Under full recompute a micro-step runs the forward twice: the first forward is a quarter of it.
  void overlap_param_gather_under_full_recompute() {
    const ModelShape gpt2 = preset("gpt2-124m");
    const GpuProfile& h100 = find_gpu_profile("H100");
    EstimateSettings s = zero1_on_eight();
    s.micro_batch_size = 1;  // a short forward across nodes: the gather shows past it
    s.seq = 128;
    s.layout[Axis::dp] = 64;
    s.recompute = Recompute::full;
    const TimeEstimate plain = estimate_time(gpt2, s, &h100);
    const double gather_s = plain.dp_comm_s / 2;
    s.overlap_param_gather = true;
    validate_estimate_settings(s);
    const TimeEstimate over = estimate_time(gpt2, s, &h100);
    const HiddenCollective expect = hide_collective(gather_s, plain.compute_s / 4 / 4, gather_s / 12);
    QVERIFY(expect.exposed_s > gather_s / 12);
    QVERIFY(near(over.dp_exposed_s, plain.dp_exposed_s - gather_s + expect.exposed_s));
    QVERIFY(near(over.overlap_contention_s, expect.contention_s));
  }

  // NVLink SHARP speeds up an H100 node's all-reduce (476 GB/s busbw) but not its all-gathers and
  // reduce-scatters (360); an A100 node's are 200; the flat model keeps the datasheet's link.
  void node_collectives_at_their_measured_bus_bandwidth() {
    QCOMPARE(measured_node_bus_gbps("H100").all_reduce, 476.0);
    QCOMPARE(measured_node_bus_gbps("H200").other, 360.0);
    QCOMPARE(measured_node_bus_gbps("A100-80GB").other, 200.0);
    QCOMPARE(measured_node_bus_gbps("RTX4090").all_reduce, 0.0);
    const ModelShape gpt2 = preset("gpt2-124m");
    const GpuProfile& h100 = find_gpu_profile("H100");
    EstimateSettings s = h100_node();
    s.layout[Axis::tp] = 4;
    const TimeEstimate all_reduce = estimate_time(gpt2, s, &h100);
    QCOMPARE(all_reduce.tp_comm_s, all_reduce.tp_bytes / 476e9);
    s.sequence_parallel = true;
    const TimeEstimate gathers = estimate_time(gpt2, s, &h100);
    QCOMPARE(gathers.tp_comm_s, gathers.tp_bytes / 360e9);
    QVERIFY(gathers.tp_link.find("360 GB/s measured by nccl-tests") != std::string::npos);
    s.layout[Axis::tp] = 1;
    s.sequence_parallel = false;
    s.layout[Axis::dp] = 8;
    const TimeEstimate ddp = estimate_time(gpt2, s, &h100);
    QCOMPARE(ddp.dp_comm_s, ddp.dp_bytes / 476e9);
    s.zero_stage = 1;
    const TimeEstimate zero1 = estimate_time(gpt2, s, &h100);
    QCOMPARE(zero1.dp_comm_s, zero1.dp_bytes / 360e9);
    s.measured_kernels = false;
    const TimeEstimate flat = estimate_time(gpt2, s, &h100);
    QCOMPARE(flat.dp_comm_s, flat.dp_bytes / 450e9);
  }
};

QTEST_GUILESS_MAIN(TestEstimateOverlap)
#include "test_estimate_overlap.moc"
