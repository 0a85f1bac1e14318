// SPDX-License-Identifier: GPL-3.0-or-later
// The kernel model's overlap inputs and the node's measured bus bandwidth: a collective hidden
// behind compute at the measured contention (clock/overlap_contention.h), --tp-comm-overlap and
// --overlap-param-gather as Megatron-LM runs them, and each collective at the bus bandwidth
// nccl-tests measures for its kind (clock/sustained_clock.h).
#include <QTest>
#include <cmath>

#include "clock/overlap_contention.h"
#include "clock/sustained_clock.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "model/model_config.h"

using namespace shardscope;

namespace {

ModelShape preset(const char* name) {
  return model_shape_from_config(find_model_preset(name), name);
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::abs(b);
}

// GPT-2 124M on one H100 node, bf16, under the kernel model.
EstimateSettings h100_node() {
  EstimateSettings s;
  s.micro_batch_size = 8;
  s.seq = 1024;
  s.precision = Precision::bf16;
  s.activations = ActivationMode::formula;
  s.measured_kernels = true;
  s.flash_attention = true;
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
