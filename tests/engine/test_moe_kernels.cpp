// SPDX-License-Identifier: GPL-3.0-or-later
// A mixture of experts on the kernel model (estimate/moe_kernels.h): each MoE layer's GEMMs run
// the router and a token's k experts, not every expert; the experts' rows follow the routing and
// expert parallelism; dense layers (DeepSeek-V3's first ones) stay dense.
#include <QTest>
#include <cmath>

#include "clock/kernel_model.h"
#include "engine/estimate_fixtures.h"
#include "estimate/estimate.h"
#include "estimate/model_shape.h"
#include "estimate/moe_kernels.h"
#include "estimate/step_kernels.h"
#include "io/hf_config.h"
#include "model/model_config.h"

using namespace shardscope;

namespace {

// Mixtral 8x7B's shape with E experts, top-k (resources/examples/mixtral_8x7b_config.json).
ModelShape mixtral(int experts, int top_k) {
  const std::string json = R"({"model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "tie_word_embeddings": false, "num_local_experts": )" +
                           std::to_string(experts) + R"(, "num_experts_per_tok": )" + std::to_string(top_k) + "}";
  return model_shape_from_hf(parse_hf_config(json, "mixtral.json"));
}

// torchtitan's settings (bf16, fused attention, the kernel model) at micro-batch 1 x 4096.
EstimateSettings h100_settings(int dp = 8) {
  EstimateSettings s = test::torchtitan_settings(dp);
  s.micro_batch_size = 1;
  s.seq = 4096;
  return s;
}

// A kernel model whose GEMM seconds are their FLOPs: peak 1 FLOP/s at fraction 1, no floor, memory free.
KernelModel flop_counter() {
  KernelModel km;
  km.peak_flops = 1;
  km.bytes_per_s = 1e300;
  return km;
}

bool near(double got, double want, double within) {
  return std::fabs(got / want - 1) <= within;
}

}  // namespace

class TestMoeKernels : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void gemm_flops_are_the_active_share();
  void more_experts_same_active_compute();
  void expert_parallel_splits_the_experts_not_the_rows();
  void dense_layers_priced_dense();
  void dense_models_unchanged();
};

// The kernel list's GEMM FLOPs per rank are the FLOPs count's matmul share, 6N per token (N the
// active parameters: a token's 2 of 8 experts and the router): x3.65 when every expert's
// parameters were read as the attention's width.
void TestMoeKernels::gemm_flops_are_the_active_share() {
  const ModelShape model = mixtral(8, 2);
  const EstimateSettings s = h100_settings();
  const StepKernels k = step_kernels(model, s, flop_counter());
  const TimeEstimate t = estimate_time(model, s, nullptr);
  const double tokens_per_rank = static_cast<double>(t.tokens_per_step) / s.world_size();
  const double want = 6 * static_cast<double>(t.matmul_parameters) * tokens_per_rank;
  qInfo("GEMM FLOPs per rank %.4g, 6N per token %.4g (x%.5f)", k.gemm_s, want, k.gemm_s / want);
  QVERIFY2(near(k.gemm_s, want, 1e-3), qPrintable(QString::number(k.gemm_s / want)));
  // Forward 2 GEMMs (qkv, out) + router + 2 grouped expert projections; backward twice that; + head.
  QCOMPARE(k.gemm_kernels, 32.0 * 3 * 5 + 3 + 32 * 3);  // the flash attention core's 3 launches a layer
}

// E = 8 and E = 2 at top-2 run the same rows through the same expert shapes (r·k/E rows each of
// E experts: 1024 rows x 8 or 4096 x 2, the same FLOPs); what differs is the router's width and
// passes over r·E logits, and the narrower experts' lower table fractions. Within 12%, where
// reading every expert's weights as attention made E = 8 3.6x slower.
void TestMoeKernels::more_experts_same_active_compute() {
  const EstimateSettings s = h100_settings();
  const KernelModel km = measured_kernel_model(989.4, 3350);
  const StepKernels eight = step_kernels(mixtral(8, 2), s, km), two = step_kernels(mixtral(2, 2), s, km);
  qInfo("E = 8: GEMMs %.4f s, memory %.4f s; E = 2: GEMMs %.4f s, memory %.4f s", eight.gemm_s, eight.memory_s,
        two.gemm_s, two.memory_s);
  QVERIFY(eight.gemm_s >= two.gemm_s);
  QVERIFY2(near(eight.gemm_s, two.gemm_s, 0.12), qPrintable(QString::number(eight.gemm_s / two.gemm_s)));
  QVERIFY2(near(eight.memory_s, two.memory_s, 0.05), qPrintable(QString::number(eight.memory_s / two.memory_s)));
  // The same active compute at the FLOP counter: only the router's E·h columns differ.
  const double eight_flops = step_kernels(mixtral(8, 2), s, flop_counter()).gemm_s,
               two_flops = step_kernels(mixtral(2, 2), s, flop_counter()).gemm_s;
  const double router = 6.0 * 4096 * (8 - 2) * 4096 * 32;  // 6·r·(ΔE)·h a layer, 32 layers
  QVERIFY(near(eight_flops - two_flops, router, 1e-6));
}

// Expert parallelism: a rank keeps E/ep experts, each receiving r·k/E rows from each of the ep
// ranks: half the experts, each twice the rows, the same FLOPs, half the expert GEMM launches.
void TestMoeKernels::expert_parallel_splits_the_experts_not_the_rows() {
  EstimateSettings s = h100_settings();
  const ModelShape model = mixtral(8, 2);
  const KernelModel km = measured_kernel_model(989.4, 3350);
  const MoeLayerKernels one = moe_layer_kernels(model, s, km);
  s.expert_parallel = 2;
  const MoeLayerKernels two = moe_layer_kernels(model, s, km);
  QCOMPARE(one.rank_experts, 8.0);
  QCOMPARE(one.expert_rows, 4096.0 * 2 / 8);
  QCOMPARE(two.rank_experts, 4.0);
  QCOMPARE(two.expert_rows, 2 * one.expert_rows);
  // Grouped GEMMs: one launch a projection whatever the experts; taller GEMMs reach more of peak.
  QCOMPARE(two.kernels_forward, one.kernels_forward);
  QVERIFY(two.gemm_forward < one.gemm_forward);
  QCOMPARE(step_kernels(model, s, flop_counter()).gemm_s, step_kernels(model, h100_settings(), flop_counter()).gemm_s);
  // ShardScope's own kernels launch one GEMM per expert: ep halves a rank's launches.
  const ModelShape engine = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  EstimateSettings tiny;
  tiny.seq = 64;
  tiny.layout[Axis::dp] = 2;
  const MoeLayerKernels alone = moe_layer_kernels(engine, tiny, km);
  tiny.expert_parallel = 2;
  const MoeLayerKernels split = moe_layer_kernels(engine, tiny, km);
  QCOMPARE(alone.kernels_forward, 1.0 + 2 * 4);  // the router, fc and proj of each of 4 experts
  QCOMPARE(split.kernels_forward, 1.0 + 2 * 2);
}

// DeepSeek-V3's first 3 layers have a dense MLP of 18,432 and its MoE layers 256 experts of 2,048
// (top-8) and one shared expert: the whole model's GEMM FLOPs are again 6N a token (x19 when every
// expert's parameters were read as the attention's width).
void TestMoeKernels::dense_layers_priced_dense() {
  const ModelShape model =
      load_model_shape(SHARDSCOPE_FIXTURES "/../../resources/examples/deepseek_v3_config.json", nullptr);
  QCOMPARE(model.dense_layers, std::int64_t{3});
  QCOMPARE(model.expert_intermediate, std::int64_t{2048});
  QCOMPARE(model.shared_experts, std::int64_t{1});
  EstimateSettings s = h100_settings();
  const TimeEstimate t = estimate_time(model, s, nullptr);
  const double tokens_per_rank = static_cast<double>(t.tokens_per_step) / s.world_size();
  const double gemm = step_kernels(model, s, flop_counter()).gemm_s;
  const double want = 6 * static_cast<double>(t.matmul_parameters) * tokens_per_rank;
  qInfo("DeepSeek-V3 GEMM FLOPs per rank %.4g, 6N per token %.4g (x%.4f)", gemm, want, gemm / want);
  // MLA's low-rank projections are priced as one qkv width from their parameters: within 2%.
  QVERIFY2(near(gemm, want, 0.02), qPrintable(QString::number(gemm / want)));
}

// A model without experts: the same kernels as before (the dense rows of
// bench/run_published_runs.sh stay where they were).
void TestMoeKernels::dense_models_unchanged() {
  const ModelShape dense = model_shape_from_hf(parse_hf_config(
      R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8})",
      "mistral-7b.json"));
  QCOMPARE(dense.experts, std::int64_t{0});
  QCOMPARE(moe_mlp_parameters(dense), 0.0);
  const StepKernels k = step_kernels(dense, h100_settings(), flop_counter());
  const TimeEstimate t = estimate_time(dense, h100_settings(), nullptr);
  const double want = 6 * static_cast<double>(t.matmul_parameters) * 4096;
  QVERIFY(near(k.gemm_s, want, 1e-3));
}

QTEST_APPLESS_MAIN(TestMoeKernels)
#include "test_moe_kernels.moc"
