// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face config.json files of known models: the parameter counts the
// importer gives are the published ones, to the parameter, and the engine's
// own layout and the estimator's model shape agree with them.
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "config/gpu_profiles.h"
#include "core/error.h"
#include "estimate/config_import.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "estimate/time_model.h"
#include "io/hf_config.h"
#include "io/hf_model.h"

using namespace shardscope;

namespace {
const std::string kConfigs = std::string(SHARDSCOPE_FIXTURES) + "/configs/";

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every config.json a fixture of tests/tools/dense_parameter_count.py names against the
// counts transformers made of it: the model, its base model, a layer and the largest module.
void compare_with_transformers(const std::string& fixture, int file_count) {
  const nlohmann::json counts = nlohmann::json::parse(std::ifstream(kConfigs + fixture));
  int files = 0;
  for (const auto& [file, expected] : counts.items()) {
    if (file == "transformers") continue;
    ++files;
    const HfModelConfig c = load_hf_config(kConfigs + file);
    for (const std::string& warning : c.warnings)  // every key known (Phi-3's sliding window is named)
      QVERIFY2(warning.find("sliding_window") != std::string::npos, warning.c_str());
    QCOMPARE(c.model_type, expected["model"].get<std::string>());
    QCOMPARE(c.training_parameters(), expected["causal_lm_parameters"].get<std::int64_t>());
    QCOMPARE(c.base_model_parameters(), expected["base_model_parameters"].get<std::int64_t>());
    QCOMPARE(c.layer_parameters(), expected["layer_parameters"].get<std::int64_t>());
    QCOMPARE(c.largest_module_parameters(), expected["largest_module_parameters"].get<std::int64_t>());
    QVERIFY(!c.engine_config());  // planned, not trained: the engine's kernels are GPT-2's and BERT's
    const ModelShape shape = model_shape_from_hf(c);
    QCOMPARE(shape.parameters(), c.training_parameters());
  }
  QCOMPARE(files, file_count);
}
}  // namespace

class TestHfParameterCounts : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void gpt2_count_is_exact();
  void bert_base_uncased_count_is_exact();
  void llama_2_7b_count_is_exact();
  void mixtral_8x7b_count_is_exact();
  void deepseek_v3_count_is_exact();
  void qwen2_counts_are_exact();
  void qwen2_biases_are_planned();
  void qwen2_keys_it_lacks_are_named();
  void qwen_sliding_window_is_named();
  void qwen3_counts_are_exact();
  void qwen3_attention_is_heads_times_head_dim_wide();
  void phi3_counts_are_exact();
  void gemma_counts_are_exact();
  void tensor_parallel_replicates_norms();
  void tensor_parallel_replicates_routers_and_latent_projections();
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

// Qwen2.5-0.5B (tied, 494,032,768), Qwen2.5-7B (7,615,616,512) and a tiny one, as the
// hub's config.json files give them (huggingface.co/Qwen/Qwen2.5-0.5B, /Qwen2.5-7B):
// Llama's tensors and biases on q, k and v (tests/tools/dense_parameter_count.py).
void TestHfParameterCounts::qwen2_counts_are_exact() {
  compare_with_transformers("qwen2_parameters.json", 3);
  QCOMPARE(load_hf_config(kConfigs + "qwen2.5-7b_config.json").training_parameters(), std::int64_t{7'615'616'512});
}

// Qwen2's q, k and v biases are parameters like any other: held, trained, sent, and
// split with their columns under tensor parallelism; their adds run in the GEMMs.
void TestHfParameterCounts::qwen2_biases_are_planned() {
  const std::string path = kConfigs + "qwen2.5-7b_config.json";
  nlohmann::json as_llama = nlohmann::json::parse(file_text(path));
  as_llama["model_type"] = "llama";  // the same shape without the biases
  const HfModelConfig qwen = load_hf_config(path);
  const HfModelConfig llama = parse_hf_config(as_llama.dump(), "as_llama.json");
  const std::int64_t biases = 28 * (3584 + 2 * 512);  // L (a·d + 2 kv·d)
  QCOMPARE(qwen.training_parameters() - llama.training_parameters(), biases);
  EstimateSettings s;
  s.layout[Axis::tp] = 2;
  s.precision = Precision::bf16;
  s.seq = 4096;
  s.activations = ActivationMode::formula;  // the engine's kernels do not run a Llama-family model
  const ModelShape qwen_shape = model_shape_from_hf(qwen), llama_shape = model_shape_from_hf(llama);
  const MemoryEstimate qwen_memory = estimate_memory(qwen_shape, s), llama_memory = estimate_memory(llama_shape, s);
  QCOMPARE(qwen_memory.ranks[0].stage_parameters - llama_memory.ranks[0].stage_parameters, biases / 2);
  QVERIFY(qwen_memory.ranks[0].total() > llama_memory.ranks[0].total());
  const GpuProfile& h100 = find_gpu_profile("H100");
  const TimeEstimate qwen_time = estimate_time(qwen_shape, s, &h100), llama_time = estimate_time(llama_shape, s, &h100);
  QCOMPARE(qwen_time.matmul_parameters - llama_time.matmul_parameters, biases);
  // A bias is one more value per output column of its GEMM: a little more time, not much.
  QVERIFY(qwen_time.compute_s > llama_time.compute_s);
  QVERIFY(qwen_time.compute_s < 1.001 * llama_time.compute_s);
}

// Qwen2's attention has biases whatever attention_bias says (transformers' Qwen2Attention
// ignores the key): the key is named as one the estimator does not read; an unknown
// model_type lists the Qwen families among the supported ones.
void TestHfParameterCounts::qwen2_keys_it_lacks_are_named() {
  nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + "qwen2_tiny_config.json"));
  const std::int64_t count = parse_hf_config(config.dump(), "tiny.json").training_parameters();
  config["attention_bias"] = false;
  const HfModelConfig c = parse_hf_config(config.dump(), "tiny.json");
  QCOMPARE(c.training_parameters(), count);
  QCOMPARE(c.warnings.size(), std::size_t{1});
  QVERIFY2(c.warnings[0].find("attention_bias: unknown key") != std::string::npos, c.warnings[0].c_str());
  // Planned, not trained: train's refusal names the model type and the command that plans it.
  QTemporaryDir dir;
  std::ofstream(dir.filePath("config.json").toStdString()) << config.dump();
  try {
    read_hf_model_config(dir.path().toStdString());
    QFAIL("a qwen2 config was loaded for training");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    QVERIFY2(m.find("model_type 'qwen2' (Llama's family") != std::string::npos, m.c_str());
    QVERIFY2(m.find("`estimate --model` plans it") != std::string::npos, m.c_str());
  }
  config["model_type"] = "qwen2_moe";
  try {
    parse_hf_config(config.dump(), "moe.json");
    QFAIL("qwen2_moe was accepted");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    QVERIFY2(m.find("model_type: 'qwen2_moe' is not supported") != std::string::npos, m.c_str());
    QVERIFY2(m.find("qwen2, qwen3, phi3, gemma, gemma2)") != std::string::npos, m.c_str());
  }
}

// A sliding window changes no tensor, but the estimator prices full causal attention:
// said when transformers would use the window (use_sliding_window true, a sliding_window,
// and a layer from max_window_layers on or named "sliding_attention" in layer_types).
void TestHfParameterCounts::qwen_sliding_window_is_named() {
  nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + "qwen3_tiny_config.json"));
  config["sliding_window"] = 64;
  config["max_window_layers"] = 1;  // layers 1 and 2 of 3 slide
  const auto warnings = [&] { return parse_hf_config(config.dump(), "window.json").warnings; };
  QVERIFY(warnings().empty());  // use_sliding_window false: transformers ignores the window
  config["use_sliding_window"] = true;
  QCOMPARE(warnings().size(), std::size_t{1});
  QVERIFY2(warnings()[0].find("use_sliding_window: true") != std::string::npos, warnings()[0].c_str());
  QVERIFY2(warnings()[0].find("full causal attention") != std::string::npos, warnings()[0].c_str());
  config["max_window_layers"] = 3;  // no layer slides
  QVERIFY(warnings().empty());
  config["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
  QCOMPARE(warnings().size(), std::size_t{1});
  config["sliding_window"] = nullptr;  // no window to slide
  QVERIFY(warnings().empty());
  config["sliding_window"] = 0;
  QVERIFY_THROWS_EXCEPTION(ConfigError, warnings());  // named, out of range
}

// Qwen3-0.6B (596,049,920, head_dim 128 with hidden_size 1024 and 16 heads), Qwen3-8B
// (8,190,735,360) and a tiny one: no biases, an RMSNorm of head_dim on each head's q and k.
void TestHfParameterCounts::qwen3_counts_are_exact() {
  compare_with_transformers("qwen3_parameters.json", 3);
  const HfModelConfig small = load_hf_config(kConfigs + "qwen3-0.6b_config.json");
  QCOMPARE(small.training_parameters(), std::int64_t{596'049'920});
  QCOMPARE(small.head_dim, std::int64_t{128});
  // Without the key, Qwen3Config's head_dim is 128, not hidden_size / num_attention_heads.
  nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + "qwen3_tiny_config.json"));
  config.erase("head_dim");
  const HfModelConfig c = parse_hf_config(config.dump(), "tiny.json");
  QCOMPARE(c.head_dim, std::int64_t{128});
  // q (h, 4·128), k and v (h, 2·128), o (4·128, h), the MLP, two norms, q_norm and k_norm.
  const std::int64_t layer = 64 * 512 + 2 * 64 * 256 + 512 * 64 + 3 * 64 * 160 + 2 * 64 + 2 * 128;
  QCOMPARE(c.layer_parameters(), layer);
  QCOMPARE(c.training_parameters(), 300 * 64 + 3 * layer + 64);  // tied head
}
// Qwen3-0.6B's 16 heads of 128 are 2048 wide on a hidden size of 1024: the attention's
// FLOPs (PaLM's 12·L·H·Q·s) and the attention kernels follow a·d, not h.
void TestHfParameterCounts::qwen3_attention_is_heads_times_head_dim_wide() {
  const HfModelConfig c = load_hf_config(kConfigs + "qwen3-0.6b_config.json");
  const ModelShape shape = model_shape_from_hf(c);
  QCOMPARE(shape.attention_width, std::int64_t{2048});
  EstimateSettings s;
  s.precision = Precision::bf16;
  s.seq = 4096;
  s.activations = ActivationMode::formula;  // the engine's kernels do not run a Llama-family model
  const GpuProfile& h100 = find_gpu_profile("H100");
  const TimeEstimate t = estimate_time(shape, s, &h100);
  const double N = static_cast<double>(c.training_parameters() - c.lookup_only_parameters());
  QCOMPARE(t.model_flops_per_token, 6 * N + 12.0 * 28 * 2048 * 4096);
  QVERIFY2(t.flops_formula.find("h is the heads' width a·d = 2,048") != std::string::npos, t.flops_formula.c_str());
  // Half as wide (the hidden size's 64 a head), the attention kernels take less time.
  ModelShape narrow = shape;
  narrow.attention_width = 0;
  QVERIFY(estimate_time(narrow, s, &h100).attention_s < t.attention_s);
  // Llama-2-7B's heads are hidden / heads wide: the width is the hidden size.
  QCOMPARE(model_shape_from_hf(load_hf_config(kConfigs + "llama-2-7b_config.json")).query_width(), 4096.0);
}
// Phi-3-mini-4k (3,821,079,552) and Phi-3-medium-4k (13,960,238,080) as the hub gives them
// (huggingface.co/microsoft/Phi-3-mini-4k-instruct, /Phi-3-medium-4k-instruct) and a tiny one:
// Llama's parameters in fused qkv_proj and gate_up_proj, which makes the largest module larger.
void TestHfParameterCounts::phi3_counts_are_exact() {
  compare_with_transformers("phi3_parameters.json", 3);
  const HfModelConfig mini = load_hf_config(kConfigs + "phi-3-mini-4k_config.json");
  QCOMPARE(mini.training_parameters(), std::int64_t{3'821'079'552});
  QVERIFY(mini.fused_projections);
  // Its 2047-token window applies to every layer; the estimate says it prices full attention.
  QCOMPARE(mini.warnings.size(), std::size_t{1});
  QVERIFY2(mini.warnings[0].find("sliding_window: 2047 (every layer") != std::string::npos, mini.warnings[0].c_str());
  QVERIFY2(mini.warnings[0].find("full causal attention") != std::string::npos, mini.warnings[0].c_str());
  // The same shape as Llama's split tensors: the same count, but one gate_up_proj (h, 2I) is the
  // largest module of Phi-3-medium (5120 x 35,840), larger than its embedding (32,064 x 5120).
  nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + "phi-3-medium-4k_config.json"));
  const HfModelConfig medium = load_hf_config(kConfigs + "phi-3-medium-4k_config.json");
  QCOMPARE(medium.largest_module_parameters(), std::int64_t{5120} * 2 * 17920);
  config["model_type"] = "llama";
  const HfModelConfig split = parse_hf_config(config.dump(), "as_llama.json");
  QCOMPARE(split.training_parameters(), medium.training_parameters());
  QCOMPARE(split.largest_module_parameters(), std::int64_t{32064} * 5120);
  // attention_bias true: transformers' Phi3 has no biases, and the count has none; a warning says so.
  config["model_type"] = "phi3";
  config["attention_bias"] = true;
  const HfModelConfig biased = parse_hf_config(config.dump(), "biased.json");
  QCOMPARE(biased.training_parameters(), medium.training_parameters());
  QVERIFY(std::any_of(biased.warnings.begin(), biased.warnings.end(), [](const std::string& w) {
    return w.find("attention_bias: true is ignored") != std::string::npos;
  }));
}
// Gemma-2B (2,506,172,416), Gemma-7B (8,537,680,896), Gemma-2-2B (2,614,341,888), Gemma-2-9B
// (9,241,705,984) as the hub gives them (huggingface.co/google/gemma-7b, /gemma-2-9b, ...) and a
// tiny Gemma2: head_dim 256 (Gemma-7B: 16 x 256 = 4096 on a hidden size of 3072), tied heads,
// and in Gemma2 four RMSNorms a layer.
void TestHfParameterCounts::gemma_counts_are_exact() {
  compare_with_transformers("gemma_parameters.json", 5);
  const HfModelConfig gemma = load_hf_config(kConfigs + "gemma-7b_config.json");
  QCOMPARE(gemma.training_parameters(), std::int64_t{8'537'680'896});
  QVERIFY(gemma.tie_word_embeddings);  // GemmaConfig's default: the file does not say
  QCOMPARE(model_shape_from_hf(gemma).attention_width, std::int64_t{4096});
  const HfModelConfig gemma2 = load_hf_config(kConfigs + "gemma-2-9b_config.json");
  QCOMPARE(gemma2.training_parameters(), std::int64_t{9'241'705'984});
  // Gemma2's window slides on every other layer: named, priced as full attention.
  QCOMPARE(gemma2.warnings.size(), std::size_t{1});
  QVERIFY2(gemma2.warnings[0].find("sliding_window: 4096 (the layers") != std::string::npos,
           gemma2.warnings[0].c_str());
  // Without its two feedforward norms a layer, Gemma2-9B is 42 x 2 x 3584 parameters smaller.
  nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + "gemma-2-9b_config.json"));
  config["model_type"] = "gemma";
  QCOMPARE(gemma2.training_parameters() - parse_hf_config(config.dump(), "g.json").training_parameters(),
           std::int64_t{42} * 2 * 3584);
  config["model_type"] = "gemma2";
  config["sliding_window"] = nullptr;  // no window: no warning
  QVERIFY(parse_hf_config(config.dump(), "g.json").warnings.empty());
}

// Under tensor parallelism every tp rank holds a layer's norms whole, as Megatron-LM and Transformer
// Engine keep LayerNorm weights: Gemma2's four RMSNorms, Qwen3's q_norm and k_norm (one head_dim vector
// every head shares) beside its two, and the biases added after a row-parallel sum. One rank of a
// middle pipeline stage (layers only) holds (layer - R)/2 + R a layer at tp 2, R replicated.
void TestHfParameterCounts::tensor_parallel_replicates_norms() {
  struct Case {
    std::string file;
    std::int64_t replicated;
    int pp, middle_layers;
    bool biases = false;  // attention_bias and mlp_bias set: o_proj's and down_proj's biases replicated too
  };
  const Case cases[] = {
      {"qwen3-0.6b_config.json", 2 * 1024 + 2 * 128, 4, 7},         // 28 layers: 7 a stage
      {"gemma-2-9b_config.json", 4 * 3584, 3, 14},                  // 42 layers: 14 a stage
      {"llama-2-7b_config.json", 2 * 4096 + 2 * 4096, 4, 8, true},  // 32 layers: 8 a stage
  };
  for (const Case& c : cases) {
    nlohmann::json config = nlohmann::json::parse(file_text(kConfigs + c.file));
    if (c.biases) config["attention_bias"] = config["mlp_bias"] = true;
    const HfModelConfig hf = parse_hf_config(config.dump(), c.file);
    const ModelShape shape = model_shape_from_hf(hf);
    QCOMPARE(shape.parameters(), hf.training_parameters());  // the whole model still counted exactly
    const std::int64_t layer = hf.layer_parameters();
    QVERIFY((layer - c.replicated) % 2 == 0);
    const std::int64_t per_rank = (layer - c.replicated) / 2 + c.replicated;
    QCOMPARE(shape.stage_parameters(c.pp, 1, 2), c.middle_layers * per_rank);
    QCOMPARE(shape.stage_parameters(c.pp, 1, 1), c.middle_layers * layer);
    // The memory model's rank (and the gradients it reduces over dp) hold the same.
    EstimateSettings s;
    s.layout[Axis::pp] = c.pp;
    s.layout[Axis::tp] = 2;
    s.layout[Axis::dp] = 2;
    s.precision = Precision::bf16;
    s.seq = 1024;
    s.micro_batches = c.pp;
    s.activations = ActivationMode::formula;  // the engine's kernels do not run a Llama-family model
    const MemoryEstimate memory = estimate_memory(shape, s);
    bool seen = false;
    for (const RankMemory& r : memory.ranks)
      if (r.stage == 1) {
        QCOMPARE(r.stage_parameters, c.middle_layers * per_rank);
        seen = true;
      }
    QVERIFY(seen);
  }
}

// Mixture-of-experts layers keep their router whole on every tp rank (Megatron-LM's TopKRouter,
// torchtitan's gate), and DeepSeek-V3 its MLA down-projections into the latents as well
// (q_a_proj, kv_a_proj_with_mqa: Megatron-LM's "duplicated" TE linears, torchtitan's NoParallel).
void TestHfParameterCounts::tensor_parallel_replicates_routers_and_latent_projections() {
  struct Case {
    std::string file;
    int pp, middle_layers;  // a middle stage of MoE layers only
  };
  const std::string examples = std::string(SHARDSCOPE_FIXTURES) + "/../../resources/examples/";
  const Case cases[] = {
      {"mixtral_8x7b_config.json", 4, 8},  // 32 MoE layers: 8 a stage
      {"deepseek_v3_config.json", 4, 15},  // 61 layers (the first 3 dense): 16, 15, 15, 15
  };
  for (const Case& c : cases) {
    const HfModelConfig hf = load_hf_config(examples + c.file);
    const ModelShape shape = model_shape_from_hf(hf);
    QCOMPARE(shape.parameters(), hf.training_parameters());
    const std::int64_t h = hf.hidden;
    std::int64_t whole = 2 * h + hf.experts * h;  // two RMSNorms and the router
    if (hf.kv_lora_rank > 0)
      whole += hf.q_lora_rank + hf.kv_lora_rank + h * hf.q_lora_rank + h * (hf.kv_lora_rank + hf.qk_rope_head_dim);
    const std::int64_t layer = hf.layer_parameters();
    QCOMPARE(shape.layer_replicated_parameters + shape.router_parameters, whole);
    const std::int64_t per_rank = whole + (layer - whole + 1) / 2;
    QCOMPARE(shape.stage_parameters(c.pp, 1, 2), c.middle_layers * per_rank);
  }
}

QTEST_GUILESS_MAIN(TestHfParameterCounts)
#include "test_hf_parameter_counts.moc"
