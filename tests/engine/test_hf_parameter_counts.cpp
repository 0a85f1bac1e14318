// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face config.json files of known models: the parameter counts the
// importer gives are the published ones, to the parameter, and the engine's
// own layout and the estimator's model shape agree with them.
#include <QTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/gpu_profiles.h"
#include "estimate/config_import.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "io/hf_config.h"

using namespace shardscope;

namespace {
const std::string kConfigs = std::string(SHARDSCOPE_FIXTURES) + "/configs/";
}  // namespace

class TestHfParameterCounts : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void gpt2_count_is_exact();
  void bert_base_uncased_count_is_exact();
  void llama_2_7b_count_is_exact();
  void mixtral_8x7b_count_is_exact();
  void deepseek_v3_count_is_exact();
};

void TestHfParameterCounts::gpt2_count_is_exact() {
  const HfModelConfig c = load_hf_config(kConfigs + "gpt2_config.json");
  QCOMPARE(c.base_model_parameters(), std::int64_t{124'439'808});
  QCOMPARE(c.training_parameters(), std::int64_t{124'439'808});  // the LM head is tied
  QVERIFY2(c.warnings.empty(), c.warnings.empty() ? "" : c.warnings.front().c_str());
  // Same architecture as ShardScope's GPT: the engine's layout gives the same count.
  QVERIFY(c.engine_config().has_value());
  QCOMPARE(analytic_parameter_count(*c.engine_config()), std::int64_t{124'439'808});
  const ModelShape shape = model_shape_from_hf(c);
  QCOMPARE(shape.parameters(), std::int64_t{124'439'808});
  QCOMPARE(shape.parameters(), analytic_parameter_count(find_model_preset("gpt2-124m")));
  QCOMPARE(shape.layer_parameters, c.layer_parameters());
  QCOMPARE(shape.embedding_parameters, c.embedding_parameters());
}

void TestHfParameterCounts::bert_base_uncased_count_is_exact() {
  const HfModelConfig c = load_hf_config(kConfigs + "bert-base-uncased_config.json");
  QCOMPARE(c.base_model_parameters(), std::int64_t{109'482'240});  // BertModel with its pooler
  // ShardScope trains it as its masked LM: + the MLM head (dense, LayerNorm, decoder bias).
  QCOMPARE(c.training_parameters(), std::int64_t{110'104'890});
  QCOMPARE(c.training_parameters(), analytic_parameter_count(find_model_preset("bert-base")));
  QVERIFY(c.warnings.empty());
  const ModelShape shape = model_shape_from_hf(c);
  QCOMPARE(shape.parameters(), c.training_parameters());
  QCOMPARE(shape.base_model_parameters, std::int64_t{109'482'240});
  QCOMPARE(shape.head_parameters, c.head_parameters());  // the engine's layout and the HF count agree part by part
}

void TestHfParameterCounts::llama_2_7b_count_is_exact() {
  const HfModelConfig c = load_hf_config(kConfigs + "llama-2-7b_config.json");
  QCOMPARE(c.training_parameters(), std::int64_t{6'738'415'616});    // LlamaForCausalLM
  QCOMPARE(c.base_model_parameters(), std::int64_t{6'607'343'616});  // LlamaModel: no lm_head
  QCOMPARE(c.layer_parameters(), std::int64_t{202'383'360});         // 4h² + 3h·I + 2h
  QCOMPARE(c.largest_module_parameters(), std::int64_t{131'072'000});
  QVERIFY(!c.engine_config());  // RMSNorm, SwiGLU, RoPE: not ShardScope's kernels
  // Grouped-query attention (Llama-2-70B): k and v have num_key_value_heads heads.
  HfModelConfig gqa = parse_hf_config(R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 8192,
      "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8})",
                                      "70b.json");
  QCOMPARE(gqa.training_parameters(), std::int64_t{68'976'648'192});
}

// resources/examples/mixtral_8x7b_config.json against the counts transformers
// makes of it (tests/tools/mixtral_parameter_count.py, on the meta device).
void TestHfParameterCounts::mixtral_8x7b_count_is_exact() {
  const nlohmann::json counts = nlohmann::json::parse(std::ifstream(kConfigs + "mixtral_8x7b_parameters.json"));
  const HfModelConfig c =
      load_hf_config(std::string(SHARDSCOPE_FIXTURES) + "/../../resources/examples/mixtral_8x7b_config.json");
  QVERIFY2(c.warnings.empty(), c.warnings.empty() ? "" : c.warnings[0].c_str());
  QCOMPARE(c.experts, std::int64_t{8});
  QCOMPARE(c.top_k, std::int64_t{2});
  QCOMPARE(c.training_parameters(), counts["causal_lm_parameters"].get<std::int64_t>());  // 46,702,792,704
  QCOMPARE(c.base_model_parameters(), counts["base_model_parameters"].get<std::int64_t>());
  QCOMPARE(c.layer_parameters(), counts["layer_parameters"].get<std::int64_t>());  // 8 experts and the router in it
  QCOMPARE(c.largest_module_parameters(), counts["layer_expert_parameters"].get<std::int64_t>());
  // Active: 2 of the 8 experts per token, 12.9B (Mistral's "12.9B active parameters").
  QCOMPARE(c.active_training_parameters(), std::int64_t{12'879'925'248});
  // The estimator holds the total and computes with the active: 6N reads k of E experts.
  const ModelShape shape = model_shape_from_hf(c);
  QCOMPARE(shape.parameters(), c.training_parameters());
  QCOMPARE(shape.parameters() - shape.idle_expert_parameters, c.active_training_parameters());
  const ModelShape tiny = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  QCOMPARE(tiny.parameters(), std::int64_t{2'441'984});  // gpt-tiny's 859,392 + 4 layers x (3 experts + a router)
  QCOMPARE(tiny.parameters() - tiny.idle_expert_parameters, std::int64_t{1'388'288});  // 2 of 4 experts active
}

// resources/examples/deepseek_v3_config.json (multi-head latent attention, 3 dense
// layers, then 256 routed experts of width 2048, 1 shared, top-8) against the
// counts transformers makes of it (tests/tools/deepseek_v3_parameter_count.py):
// 671B in all, the multi-token-prediction layer left out as transformers does.
void TestHfParameterCounts::deepseek_v3_count_is_exact() {
  const nlohmann::json counts = nlohmann::json::parse(std::ifstream(kConfigs + "deepseek_v3_parameters.json"));
  const HfModelConfig c =
      load_hf_config(std::string(SHARDSCOPE_FIXTURES) + "/../../resources/examples/deepseek_v3_config.json");
  QVERIFY2(c.warnings.empty(), c.warnings.empty() ? "" : c.warnings[0].c_str());
  QCOMPARE(c.experts, std::int64_t{256});
  QCOMPARE(c.top_k, std::int64_t{8});
  QCOMPARE(c.layers, counts["decoder_layers"].get<std::int64_t>());
  QCOMPARE(c.training_parameters(), counts["causal_lm_parameters"].get<std::int64_t>());  // 671,026,404,352
  QCOMPARE(c.base_model_parameters(), counts["base_model_parameters"].get<std::int64_t>());
  QCOMPARE(c.dense_layer_parameters(), counts["dense_layer_parameters"].get<std::int64_t>());
  QCOMPARE(c.layer_parameters(), counts["layer_parameters"].get<std::int64_t>());
  QCOMPARE(c.largest_module_parameters(), counts["layer_expert_parameters"].get<std::int64_t>());
  // Active: 8 of the 256 routed experts (and the shared one) per token in the 58 MoE layers:
  // 671.0B - 58 x 248 x 3 x 7168 x 2048 = 37.6B (DeepSeek-AI's "37B activated").
  QCOMPARE(c.active_training_parameters(), std::int64_t{37'552'282'624});
  const ModelShape shape = model_shape_from_hf(c);
  QCOMPARE(shape.parameters(), c.training_parameters());
  QCOMPARE(shape.parameters() - shape.idle_expert_parameters, c.active_training_parameters());
  QCOMPARE(shape.layer_expert_parameters, counts["layer_expert_parameters"].get<std::int64_t>());
  // A plan: 2 x 64 GPUs in 16 nodes, ep 64 (4 routed experts per GPU), bf16: each GPU holds the
  // dense parameters and 4 of the 256 routed experts of each MoE layer.
  EstimateSettings s;
  s.layout[Axis::dp] = 128;
  s.expert_parallel = 64;
  s.precision = Precision::bf16;
  s.seq = 4096;
  s.activations = ActivationMode::formula;
  const MemoryEstimate m = estimate_memory(shape, s);
  const std::int64_t experts = 58 * counts["layer_expert_parameters"].get<std::int64_t>();
  QCOMPARE(m.ranks[0].stage_parameters, c.training_parameters() - experts + experts / 64);
}


QTEST_GUILESS_MAIN(TestHfParameterCounts)
#include "test_hf_parameter_counts.moc"
