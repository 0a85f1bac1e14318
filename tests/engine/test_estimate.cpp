// SPDX-License-Identifier: GPL-3.0-or-later
// The estimator against the papers it implements (GPT-3 175B in fp32 with Adam,
// the ZeRO paper's example, Korthikanti et al.'s activations), DeepSpeed's own
// estimator, the engine's pipeline schedules, and its report (fit, JSON).
// Predicted against measured ledger bytes: test_estimate_ledger.cpp; the time model:
// test_estimate_time.cpp.
#include <QTest>

#include "core/error.h"
#include "engine/thread_cpu_timer.h"
#include "estimate/activation_model.h"
#include "estimate/deepspeed_estimator.h"
#include "estimate/estimate.h"
#include "estimate/formula_text.h"
#include "estimate/host_memory_fit.h"
#include "io/hf_config.h"
#include "model/activations.h"
#include "plan/pipeline_schedule.h"

using namespace shardscope;

namespace {

// A model that is nothing but Ψ parameters (for the papers' model-state examples).
ModelShape parameters_only(std::int64_t psi) {
  ModelShape m;
  m.name = "Ψ = " + std::to_string(psi);
  m.architecture = "gpt2";
  m.vocab = 50257;
  m.max_positions = 2048;
  m.hidden = 12288;
  m.layers = 96;
  m.heads = 96;
  m.intermediate = 4 * 12288;
  m.embedding_parameters = psi;
  return m;
}

std::int64_t model_states(const RankMemory& r) {
  return r.bytes[MemoryCategory::parameters] + r.bytes[MemoryCategory::gradients] +
         r.bytes[MemoryCategory::optimizer_states];
}

ModelShape preset(const char* name) {
  return model_shape_from_config(find_model_preset(name), name);
}

}  // namespace

class TestEstimate : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void seed_example_gpt3_175b_fp32_adam();
  void zero_paper_example_per_stage();
  void deepspeed_estimator_conventions_two_sizes();
  void in_flight_closed_form_matches_engine_schedules();
  void large_pipelines_estimate_quickly();
  void huge_settings_are_refused_not_wrapped();
  void formula_activations_follow_korthikanti();
  void tensor_parallel_formulas_and_refusals();
  void formula_activations_count_the_experts();
  void fit_names_the_largest_lever();
  void json_uses_the_ledger_names();
  void settings_resolve_like_deepspeed();
  void byte_sizes_in_three_digits();
  void host_memory_fit_names_the_prediction_and_the_limit();
};

// GPT-3 175B in fp32 with Adam: 4Ψ weights + 4Ψ gradients + 8Ψ Adam moments
// = 700 GB + 700 GB + 1400 GB = 2.8 TB.
void TestEstimate::seed_example_gpt3_175b_fp32_adam() {
  EstimateSettings s;
  s.activations = ActivationMode::formula;
  s.seq = 2048;
  const MemoryEstimate m = estimate_memory(parameters_only(175'000'000'000), s);
  QCOMPARE(m.ranks.size(), std::size_t{1});
  const RankMemory& r = m.ranks[0];
  QCOMPARE(r.bytes[MemoryCategory::parameters], std::int64_t{700'000'000'000});          // 4Ψ
  QCOMPARE(r.bytes[MemoryCategory::gradients], std::int64_t{700'000'000'000});           // 4Ψ
  QCOMPARE(r.bytes[MemoryCategory::optimizer_states], std::int64_t{1'400'000'000'000});  // 8Ψ: Adam m and v
  QCOMPARE(model_states(r), std::int64_t{2'800'000'000'000});                            // 2.8 TB
  QVERIFY(r.formula(MemoryCategory::parameters).find("4Ψ = 4 × 175,000,000,000") != std::string::npos);
  QVERIFY(!m.engine_exact);
}

// Rajbhandari et al. 2020, Figure 1: Ψ = 7.5B, Nd = 64, K = 12 (mixed-precision Adam):
// 120 GB, 31.4 GB, 16.6 GB and 1.9 GB per GPU for stages 0-3 (GB = 10^9 bytes).
void TestEstimate::zero_paper_example_per_stage() {
  const std::int64_t expected[] = {120'000'000'000, 31'406'250'000, 16'640'625'000, 1'875'000'000};
  const double rounded[] = {120.0, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    EstimateSettings s;
    s.layout[Axis::dp] = 64;
    s.zero_stage = stage;
    s.precision = Precision::fp16;
    s.activations = ActivationMode::formula;
    s.seq = 1024;
    const MemoryEstimate m = estimate_memory(parameters_only(7'500'000'000), s);
    QCOMPARE(m.ranks.size(), std::size_t{64});
    for (const RankMemory& r : {m.ranks.front(), m.ranks.back()}) {
      QCOMPARE(model_states(r), expected[stage]);
      QCOMPARE(std::round(static_cast<double>(model_states(r)) / 1e8) / 10.0, rounded[stage]);
    }
  }
}

// deepspeed/runtime/zero/stage_1_and_2.py and stage3.py; expected values are
// those functions' results (Python), for GPT-2 124M and Llama-2-7B on 8 GPUs.
void TestEstimate::deepspeed_estimator_conventions_two_sizes() {
  struct Size {
    std::int64_t psi, largest;
  };
  const Size gpt2{124'439'808, 50257ll * 768}, llama{6'738'415'616, 32000ll * 4096};
  auto z2 = deepspeed_zero2_model_states(gpt2.psi, 8, 1, false);
  QCOMPARE(z2.gpu_bytes, std::int64_t{528'869'184});  // 2Ψ + int(18Ψ/8)
  QCOMPARE(z2.cpu_bytes, std::int64_t{5'973'110'784});
  QCOMPARE(z2.cpu_bytes_before_factor * z2.buffer_factor, 5'973'110'784.0);  // the 1.5 factor kept apart
  QCOMPARE(z2.cpu_bytes_before_factor, 3'982'073'856.0);
  z2 = deepspeed_zero2_model_states(gpt2.psi, 8, 2, true);
  QCOMPARE(z2.gpu_bytes, std::int64_t{248'879'616});
  QCOMPARE(z2.cpu_bytes, std::int64_t{11'946'221'568});
  z2 = deepspeed_zero2_model_states(llama.psi, 8, 1, false);
  QCOMPARE(z2.gpu_bytes, std::int64_t{28'638'266'368});
  QCOMPARE(z2.cpu_bytes, std::int64_t{323'443'949'568});
  z2 = deepspeed_zero2_model_states(llama.psi, 8, 2, false);
  QCOMPARE(z2.gpu_bytes, std::int64_t{21'057'548'800});

  auto z3 = deepspeed_zero3_model_states(gpt2.psi, gpt2.largest, 8, 1, false, false);
  QCOMPARE(z3.gpu_bytes, std::int64_t{434'379'072});
  QCOMPARE(z3.cpu_bytes, std::int64_t{1'852'674'048});
  QCOMPARE(z3.largest_layer_memory, std::int64_t{154'389'504});
  z3 = deepspeed_zero3_model_states(gpt2.psi, gpt2.largest, 8, 2, true, false);
  QCOMPARE(z3.gpu_bytes, std::int64_t{169'944'480});
  QCOMPARE(z3.cpu_bytes, std::int64_t{1'493'277'696});
  z3 = deepspeed_zero3_model_states(llama.psi, llama.largest, 8, 1, true, true);
  QCOMPARE(z3.gpu_bytes, std::int64_t{524'288'000});
  QCOMPARE(z3.cpu_bytes, std::int64_t{181'937'221'632});
  z3 = deepspeed_zero3_model_states(llama.psi, llama.largest, 8, 2, true, false);
  QCOMPARE(z3.gpu_bytes, std::int64_t{1'366'589'952});
  QCOMPARE(z3.cpu_bytes, std::int64_t{80'860'987'392});
  z3 = deepspeed_zero3_model_states(llama.psi, llama.largest, 8, 2, false, false, false);
  QCOMPARE(z3.gpu_bytes, std::int64_t{8'105'005'568});
  QCOMPARE(z3.cpu_bytes, std::int64_t{323'443'949'568});
  // The largest layer DeepSpeed would find in the preset is its token embedding.
  QCOMPARE(preset("gpt2-124m").largest_module_parameters, gpt2.largest);
}

// 500 stages × 2000 micro-batches: the estimator simulated the whole schedule
// (6 million actions) once per stage, for hours; the closed form answers at once.
void TestEstimate::large_pipelines_estimate_quickly() {
  const ModelShape model = model_shape_from_hf(parse_hf_config(
      R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 256, "intermediate_size": 512,
          "num_hidden_layers": 1000, "num_attention_heads": 4})",
      "deep.json"));
  EstimateSettings s;
  s.layout[Axis::pp] = 500;
  s.micro_batches = 2000;
  s.seq = 128;
  s.activations = ActivationMode::formula;
  ThreadCpuTimer timer;  // CPU time: other work on the cores does not count
  timer.start();
  const MemoryEstimate memory = estimate_memory(model, s);
  QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed()) + " ms"));
  QCOMPARE(memory.ranks.front().micro_batches_in_flight, 500);  // 1F1B: min(m, p - s)
  QCOMPARE(memory.ranks.back().micro_batches_in_flight, 1);
}

// Sizes past 64 bits are refused with the settings that make them, never printed negative.
void TestEstimate::huge_settings_are_refused_not_wrapped() {
  EstimateRequest request;
  request.model = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
  request.settings.micro_batch_size = 1 << 24;
  request.settings.accum = 1 << 24;
  request.settings.layout[Axis::dp] = 16;
  request.settings.micro_batches = 1 << 20;
  request.settings.layout[Axis::pp] = 2;
  try {
    (void)compute_estimate(request);
    QFAIL("no ConfigError");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    QVERIFY2(m.find("the estimate for gpt-tiny does not fit in 64-bit counts") != std::string::npos, e.what());
    QVERIFY2(m.find("micro-batch 16777216, accum 16777216, micro-batches 1048576, dp 16") != std::string::npos,
             e.what());
  }
  request.settings = {};
  request.settings.micro_batch_size = 1 << 24;  // the logits alone: 4·b·s·v = 4 × 2^24 × 256 × vocab bytes
  request.settings.seq = 256;
  const Estimate big = compute_estimate(request);
  for (const RankMemory& r : big.memory.ranks) {
    for (MemoryCategory c : kAllMemoryCategories) QVERIFY(r.bytes[c] >= 0);
    QVERIFY(r.total() > std::int64_t{1} << 40);
  }
}

// The closed form of activation slots agrees with the engine's schedules.
void TestEstimate::in_flight_closed_form_matches_engine_schedules() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b})
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m)
        for (int stage = 0; stage < p; ++stage)
          QCOMPARE(micro_batches_in_flight(kind, p, stage, m), micro_batches_in_flight_closed_form(kind, p, stage, m));
  QCOMPARE(micro_batches_in_flight(PipelineScheduleKind::one_f_one_b, 4, 0, 8), 4);  // p - s
  QCOMPARE(micro_batches_in_flight(PipelineScheduleKind::gpipe, 4, 3, 8), 8);        // m
}

// Korthikanti et al. 2022, Table 2 (16-bit): per layer sbh(34 + 5as/h), 34sbh with
// selective recompute, 2sbh with full recompute.
void TestEstimate::formula_activations_follow_korthikanti() {
  ModelShape m = parameters_only(1);
  m.hidden = 1024;
  m.heads = 16;
  m.layers = 24;
  const std::int64_t s = 2048, b = 1, h = 1024, a = 16, L = 24, sbh = s * b * h;
  const StageLayers middle{0, 24, false, false};                 // layers only: no embeddings, no head
  const std::int64_t none_layer = sbh * 34 + 5 * a * s * s * b;  // = sbh(34 + 5as/h) = sbh × 194
  QCOMPARE(none_layer, sbh * 194);
  auto bytes = [&](Recompute r, Precision p) { return formula_activation_bytes(m, middle, 1, 2048, r, p).activations; };
  QCOMPARE(bytes(Recompute::none, Precision::bf16), L * none_layer);
  QCOMPARE(bytes(Recompute::selective, Precision::bf16), L * 34 * sbh);
  QCOMPARE(bytes(Recompute::full, Precision::bf16), L * 2 * sbh + none_layer);  // + the layer being recomputed
  QCOMPARE(bytes(Recompute::none, Precision::fp32), L * (sbh * 66 + 9 * a * s * s * b));  // 2-byte terms doubled
  // The stage ends: embeddings sbh(d + 1) on the first stage, d·sbh + 4sbv on the last.
  const ActivationBytes whole =
      formula_activation_bytes(m, StageLayers{0, 24, true, true}, 1, 2048, Recompute::none, Precision::bf16);
  QCOMPARE(whole.activations, L * none_layer + 3 * sbh + 2 * sbh + 4 * s * b * m.vocab);
  // ShardScope's own kernels: exactly what activations.h carves, in bytes.
  const ModelConfig tiny = find_model_preset("gpt-tiny");
  const ActivationBytes exact =
      shardscope_activation_bytes(tiny, whole_model_stage(tiny), 4, 64, Recompute::none);
  QCOMPARE(exact.activations, 4 * Activations::total_floats(tiny, 4, 64, false));
  QCOMPARE(exact.workspace, 4 * BackwardScratch::total_floats(tiny, 4, 64));
  QVERIFY_THROWS_EXCEPTION(ConfigError,
                           shardscope_activation_bytes(tiny, whole_model_stage(tiny), 4, 64, Recompute::selective));
}

// Korthikanti et al.'s per-layer formulas with tensor (and sequence) parallelism,
// one tp rank's model states, the tp all-reduces' bytes, and the refusals by name.
void TestEstimate::tensor_parallel_formulas_and_refusals() {
  ModelShape m = parameters_only(1);
  const std::int64_t s = 2048, b = 1, h = 12288, a = 96, L = 12, t = 8, sbh = s * b * h;
  StageLayers middle{0, 12, false, false};
  middle.tp_size = 8;
  auto bytes = [&](Recompute r, bool sp) {
    return formula_activation_bytes(m, middle, 1, 2048, r, Precision::bf16, sp).activations;
  };
  const std::int64_t tp_layer = sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t;  // sbh(10 + 24/t + 5as/(ht))
  QCOMPARE(bytes(Recompute::none, false), L * tp_layer);
  QCOMPARE(bytes(Recompute::none, true), L * (sbh * 34 + 5 * a * s * s * b) / t);  // sbh/t·(34 + 5as/h)
  QCOMPARE(bytes(Recompute::selective, false), L * (10 + 24 / t) * sbh);
  QCOMPARE(bytes(Recompute::full, true), L * 2 * sbh / t + (sbh * 34 + 5 * a * s * s * b) / t);
  // The paper's ratio: SP keeps 34/(10 + 24/t) less of the layer's sbh terms than TP alone.
  QVERIFY(bytes(Recompute::selective, true) * 13 == bytes(Recompute::selective, false) * 34 / 8);

  // GPT-3 175B at tp 8 × pp 8 × dp 16 (Narayanan et al. 2021): a middle stage's rank holds about Ψ/64.
  std::vector<std::string> warnings;
  ModelShape gpt3 = load_model_shape("gpt3-175b", &warnings);
  EstimateRequest request;
  request.model = gpt3;
  EstimateSettings& st = request.settings;
  st.layout[Axis::dp] = 16;
  st.layout[Axis::pp] = 8;
  st.layout[Axis::tp] = 8;
  st.precision = Precision::fp16;
  st.seq = 2048;
  st.micro_batches = 96;
  st.recompute = Recompute::full;
  st.activations = ActivationMode::formula;
  const Estimate e = compute_estimate(request);
  QCOMPARE(static_cast<int>(e.memory.ranks.size()), 1024);
  const double per_rank = static_cast<double>(e.memory.ranks[300].stage_parameters);
  QVERIFY(std::abs(per_rank / (static_cast<double>(gpt3.parameters()) / 64.0) - 1) < 0.02);
  QVERIFY(!e.warnings.empty() && e.warnings.front().find("padded to 51200") != std::string::npos);
  // 4 all-reduces of b·s·h per layer (6 with full recompute), 2(t−1)/t each, 12 layers × 96 micro-batches.
  QCOMPARE(e.time.tp_bytes, 12.0 * 96 * 6 * 2 * 7 / 8 * sbh * 2);
  const TimeEstimate on_a100 = estimate_time(gpt3, e.settings, &find_gpu_profile("A100-80GB"));
  // The kernel model (the default) times the node's collectives at nccl-tests' measured bus bandwidth.
  QCOMPARE(on_a100.tp_link, find_gpu_profile("A100-80GB").link + ", collectives at 200 GB/s measured by nccl-tests");
  QVERIFY(on_a100.tp_comm_s > 0 && on_a100.step_overlapped_s > on_a100.compute_s + on_a100.tp_comm_s);

  // A tp group wider than a node: warned, and its all-reduces on the inter-node network.
  request.settings.gpus_per_node = 4;
  const Estimate wide = compute_estimate(request);
  bool warned = false;
  for (const std::string& w : wide.warnings) warned = warned || w.find("--tp 8 is more than --gpus-per-node 4") == 0;
  QVERIFY(warned);
  const TimeEstimate wide_time = estimate_time(gpt3, wide.settings, &find_gpu_profile("A100-80GB"));
  QCOMPARE(wide_time.tp_link, find_gpu_profile("A100-80GB").internode);

  // Refused by name with the numbers: heads that do not split, naive DataParallel, SP without tp.
  EstimateSettings bad;
  bad.layout[Axis::tp] = 3;
  try {
    (void)estimate_memory(preset("gpt-tiny"), bad);
    QFAIL("tp 3 on 4 heads was accepted");
  } catch (const ConfigError& err) {
    QVERIFY2(std::string(err.what()).find("--tp 3") != std::string::npos &&
                 std::string(err.what()).find("4 attention heads") != std::string::npos,
             err.what());
  }
  bad.layout[Axis::tp] = 2;
  bad.layout[Axis::dp] = 2;
  bad.dp_mode = DataParallelMode::naive;
  QVERIFY_THROWS_EXCEPTION(ConfigError, validate_estimate_settings(bad));
  EstimateSettings sp_alone;
  sp_alone.sequence_parallel = true;
  QVERIFY_THROWS_EXCEPTION(ConfigError, validate_estimate_settings(sp_alone));
}

void TestEstimate::fit_names_the_largest_lever() {
  EstimateRequest request;
  request.model = preset("gpt2-medium");
  request.settings.micro_batch_size = 16;
  request.settings.seq = 1024;
  request.gpu = find_gpu_profile("RTX4090");
  const Estimate e = compute_estimate(request);
  QVERIFY(e.fit.has_capacity && !e.fit.fits);
  QVERIFY(e.fit.margin_bytes < 0);
  QVERIFY2(e.fit.summary.rfind("does not fit by ", 0) == 0, e.fit.summary.c_str());
  QVERIFY(e.fit.levers.size() >= 2);
  for (std::size_t i = 1; i < e.fit.levers.size(); ++i)
    QVERIFY(e.fit.levers[i - 1].saves_bytes >= e.fit.levers[i].saves_bytes);
  QCOMPARE(e.fit.levers.front().change, std::string("turn on activation checkpointing"));
  QVERIFY(e.fit.summary.find(e.fit.levers.front().change) != std::string::npos);
  for (const FitLever& l : e.fit.levers) QCOMPARE(l.fits, l.saves_bytes >= -e.fit.margin_bytes);
  request.gpu_memory_bytes = 1'000'000'000'000;  // --gpu-mem 1TB
  QVERIFY(compute_estimate(request).fit.fits);
}

void TestEstimate::json_uses_the_ledger_names() {
  EstimateRequest request;
  request.model = preset("gpt-tiny");
  request.settings.layout[Axis::dp] = 2;
  request.settings.seq = 64;
  request.gpu = find_gpu_profile("A100-40GB");
  const nlohmann::json j = estimate_to_json(compute_estimate(request));
  QCOMPARE(j["ranks"].size(), std::size_t{2});
  for (const auto& rank : j["ranks"]) {
    QCOMPARE(rank["bytes"].size(), kMemoryCategoryCount);
    QCOMPARE(rank["formulas"].size(), kMemoryCategoryCount);
    std::int64_t sum = 0;
    for (MemoryCategory c : kAllMemoryCategories) {
      const std::string name(memory_category_name(c));
      QVERIFY2(rank["bytes"].contains(name) && rank["formulas"][name].is_string(), name.c_str());
      sum += rank["bytes"][name].get<std::int64_t>();
    }
    QCOMPARE(rank["total_bytes"].get<std::int64_t>(), sum);
  }
  QVERIFY(j["total_bytes"].is_number_integer() && j["fits"].get<bool>());
  QVERIFY(j["engine_exact"].get<bool>());
  for (const char* key : {"flops_per_step", "dp_bytes_per_rank", "bubble_fraction", "step_time_s", "tokens_per_s"})
    QVERIFY2(j["time"].contains(key), key);
  QVERIFY(j["time"]["model_only"].get<bool>());
}

void TestEstimate::settings_resolve_like_deepspeed() {
  SettingsPatch file;
  file.global_batch = 256;
  file.micro_batch_size = 4;
  file.origin.push_back({"global_batch", "ds.json: train_batch_size"});
  SettingsPatch flags;
  flags.axes[Axis::dp] = 8;
  EstimateSettings s = resolve_settings({}, {file, flags});
  QCOMPARE(s.accum, 8);  // 256 / (4 × 8): DeepSpeed derives gradient_accumulation_steps
  file.accum = 4;        // now 4 × 4 × 8 = 128 != 256, and the file itself says so: an error naming the key
  SettingsPatch dp_first;
  dp_first.axes[Axis::dp] = 8;
  try {
    resolve_settings({}, {dp_first, file});
    QFAIL("an inconsistent train_batch_size must be refused");
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find("ds.json: train_batch_size 256 does not equal") != std::string::npos, e.what());
  }
  std::vector<std::string> notes;  // a later flag changes the shape on purpose: it wins, with a note
  s = resolve_settings({}, {file, flags}, &notes);
  QCOMPARE(s.global_batch(), std::int64_t{128});
  QCOMPARE(notes.size(), std::size_t{1});
}

// The one byte formatter of the estimator, the trainer's out-of-memory error
// and the GUI (ui/byte_text.h): three significant digits, in decimal units for
// the estimator's tables and binary units where GPU tools are quoted.
void TestEstimate::byte_sizes_in_three_digits() {
  QCOMPARE(decimal_bytes(31406250000.0), std::string("31.4 GB"));
  QCOMPARE(decimal_bytes(1234.0), std::string("1.23 kB"));
  QCOMPARE(decimal_bytes(0.0), std::string("0 B"));
  QCOMPARE(decimal_bytes(-2.8e12), std::string("-2.80 TB"));
  QCOMPARE(binary_bytes(3328599654), std::string("3.10 GiB"));
  QCOMPARE(binary_bytes(1536), std::string("1.50 KiB"));
  QCOMPARE(binary_bytes(512), std::string("512 B"));
  QCOMPARE(binary_bytes(-1023), std::string("-1023 B"));
  QCOMPARE(binary_bytes(std::int64_t{37} << 20), std::string("37.0 MiB"));
  QCOMPARE(binary_bytes(std::int64_t{150'000'000'000}), std::string("140 GiB"));
  QCOMPARE(binary_bytes(std::int64_t{3} << 50), std::string("3.00 PiB"));
}

// A CPU run whose prediction exceeds this machine's memory is refused with both numbers.
void TestEstimate::host_memory_fit_names_the_prediction_and_the_limit() {
  const HostMemoryLimit limit{std::int64_t{3} << 30, "test limit"};
  check_fits_host_memory(std::int64_t{3} << 30, 4, limit);  // exactly full fits
  check_fits_host_memory(std::int64_t{1} << 50, 1, {});     // unknown limit: nothing refused
  try {
    check_fits_host_memory((std::int64_t{3} << 30) + (std::int64_t{1} << 29), 4, limit);
    QFAIL("a run over the limit must be refused");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    QVERIFY2(
        what.find("predicts 3.50 GiB for its 4 ranks together, more than 3.00 GiB (test limit)") != std::string::npos,
        e.what());
  }
  const HostMemoryLimit here = host_memory_limit();
  QVERIFY(here.bytes > 0);  // physical memory at least
  QVERIFY(!here.source.empty());
}

// A ShardScope MoE model in formula mode: per MoE layer the k routed copies'
// expert MLP activations and the router's probabilities, d·(9k·sbh + sbE),
// beside the dense formula (one MoE layer under full checkpointing).
void TestEstimate::formula_activations_count_the_experts() {
  const ModelShape moe = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  ModelShape dense = moe;
  dense.experts = dense.top_k = 0;
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    for (const Recompute recompute : {Recompute::none, Recompute::full}) {
      EstimateSettings s;
      s.activations = ActivationMode::formula;
      s.precision = precision;
      s.recompute = recompute;
      s.micro_batch_size = 2;
      s.seq = 64;
      const std::int64_t d = precision == Precision::fp32 ? 4 : 2, sbh = 64 * 2 * moe.hidden;
      const std::int64_t layers = recompute == Recompute::full ? 1 : moe.layers;
      const std::int64_t with = estimate_memory(moe, s).ranks[0].bytes[MemoryCategory::activations];
      const std::int64_t without = estimate_memory(dense, s).ranks[0].bytes[MemoryCategory::activations];
      QCOMPARE(with - without, layers * d * (9 * moe.top_k * sbh + 64 * 2 * moe.experts));
      QVERIFY(estimate_memory(moe, s).ranks[0].formula(MemoryCategory::activations).find("(9k·sbh + sbE)") !=
              std::string::npos);
    }
  }
}

QTEST_GUILESS_MAIN(TestEstimate)
#include "test_estimate.moc"
