// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_lesson_figures.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_lessons.h"
#include "clock/schedule_summary.h"
#include "config/run_schema.h"
#include "core/error.h"
#include "data/masked_lm.h"
#include "estimate/formula_text.h"
#include "estimate/memory_model.h"
#include "estimate/time_model.h"
#include "model/mixture_of_experts.h"
#include "train/loss_scaler.h"
#include "train/trainer.h"

namespace shardscope::cli {

namespace {

// MiB with one decimal, as the lessons and the memory bars write them.
std::string mib(double bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

struct Figures {
  std::int64_t parameters = 0;  // Ψ, the whole model's
  std::int64_t active = 0;      // a mixture of experts: the parameters one token's matmuls read (Ψ when dense)
  MemoryEstimate memory;
  TimeEstimate time;
};

Figures figures_of(const RunConfig& run) {
  const ModelShape shape = model_shape_from_config(run_model_config(run), run.model);
  const EstimateSettings settings = settings_for_run(run);  // the engine's own (fp32) activations
  return {shape.parameters(), shape.parameters() - shape.idle_expert_parameters, estimate_memory(shape, settings),
          estimate_time(shape, settings, nullptr)};
}

struct Compared {
  std::string change;  // "--checkpoint none"
  RunConfig run;
  std::string refused;  // why these keys over this run (as other flags changed it) are not a run; empty if they are
};

// lesson.json's "figures.compare" (or "figures.trained"): each entry's keys over `run`, named by their
// flags. A key that is no row of the schema is the file's error (ConfigError); a run the keys make
// invalid is `refused`.
std::vector<Compared> compared_runs(std::string_view lesson, const RunConfig& run, const char* list = "compare") {
  std::vector<Compared> out;
  for (const EmbeddedLesson& embedded : embedded_lessons()) {
    if (embedded.id != lesson) continue;
    const std::string where = "tutorials/" + std::string(lesson) + "/lesson.json: figures." + list;
    const nlohmann::json root = nlohmann::json::parse(embedded.json);  // read once already (lesson_run_config)
    const auto figures = root.find("figures");
    if (figures == root.end() || !figures->contains(list)) return out;
    for (const nlohmann::json& keys : figures->at(list)) {
      Compared c{"", run, ""};
      for (const auto& [key, value] : keys.items())
        if (find_run_field(key) == nullptr) throw ConfigError(where + ": unknown config key \"" + key + "\"");
      try {
        for (const auto& [key, value] : keys.items()) {
          const RunField* field = find_run_field(key);
          set_field(c.run, *field, value);
          if (!c.change.empty()) c.change += ' ';  // appended piece by piece: GCC 12 warns falsely (-Wrestrict)
          c.change.append(field->flag).append(1, ' ');
          c.change += value.is_string() ? value.get<std::string>() : value.dump();
        }
        validate_run_config(c.run);
      } catch (const FieldError& e) {
        c.refused = e.text([](std::string_view k) { return std::string(k); });
      } catch (const ConfigError& e) {
        c.refused = e.what();
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Rank 0's bytes by category (only those that differ from `base`, when given), its total, and the
// bytes data parallelism sends per rank.
void print_figures(const Figures& f, const Figures* base) {
  const RankMemory& r = f.memory.ranks.front();
  for (MemoryCategory c : kAllMemoryCategories) {
    if (base != nullptr && base->memory.ranks.front().bytes[c] == r.bytes[c]) continue;
    std::printf("  %-17s %10s = %s\n", std::string(memory_category_name(c)).c_str(),
                mib(static_cast<double>(r.bytes[c])).c_str(), r.formula(c).c_str());
  }
  std::printf("  %-17s %10s (rank 0)\n", "total", mib(static_cast<double>(r.total())).c_str());
  if (f.time.bubble_fraction > 0 && (base == nullptr || base->time.bubble_fraction != f.time.bubble_fraction))
    std::printf("  %-17s %9.1f%% of the step = %s\n", "bubble (formula)", 100.0 * f.time.bubble_fraction,
                f.time.bubble_formula.c_str());
  if (f.time.dp_bytes > 0 && (base == nullptr || base->time.dp_bytes != f.time.dp_bytes))
    std::printf("  %-17s %10s sent per rank per step = %s\n", "data-parallel", mib(f.time.dp_bytes).c_str(),
                f.time.dp_formula.c_str());
  if (f.time.tp_bytes > 0 && (base == nullptr || base->time.tp_bytes != f.time.tp_bytes))
    std::printf("  %-17s %10s sent per rank per step = %s\n", "tensor-parallel", mib(f.time.tp_bytes).c_str(),
                f.time.tp_formula.c_str());
}

// The run's settings its formulas take: DDP's bucket size, fp16's loss-scale rules, BERT's masking rate.
void print_settings(const RunConfig& run, const ModelConfig& model) {
  if (run.layout.dp() > 1 && run.dp_mode == DataParallelMode::ddp && run.zero_stage == 0)
    std::printf("  %-17s %g MiB each (--bucket-mb, 1 MiB = 2^20 bytes), all-reduced as backward fills them\n",
                "DDP buckets", run.bucket_mb);
  if (run.precision == Precision::fp16) {
    const LossScalerOptions o = loss_scaler_options(run);
    std::printf(
        "  %-17s starts at 2^%d, × %g on an overflow, × %g after %lld steps without one; the largest "
        "finite fp16 value is (2 − 2^−10) · 2^15 = %.0f\n",
        "loss scale", run.initial_scale_power, static_cast<double>(o.backoff_factor),
        static_cast<double>(o.growth_factor), static_cast<long long>(o.growth_interval),
        std::ldexp(2.0 - std::ldexp(1.0, -10), 15));
  }
  if (model.experts > 0) {  // routing's figures: a rank routes its own tokens of each micro-batch
    const int tokens = static_cast<int>(run.micro_batch_size()) * run.seq / run.layout.cp();
    std::printf(
        "  %-17s %d experts, top-%d per token; capacity ceil(c·N·k/E) = ceil(%g · %d · %d / %d) = %d choices "
        "per expert and layer (N = a rank's tokens per micro-batch), the rest dropped; load-balancing "
        "loss E·Σ f_e·P_e (1 when balanced) × %g\n",
        "mixture of experts", model.experts, model.top_k, static_cast<double>(model.capacity_factor), tokens,
        model.top_k, model.experts, moe_capacity(model, tokens), static_cast<double>(model.aux_loss_coef));
  }
  if (model.kind == ModelKind::bert)
    std::printf("  %-17s %.0f%% of the tokens chosen, the loss counted on those only (Devlin et al. 2019)\n",
                "masked LM", 100.0 * static_cast<double>(MaskedLmOptions{}.select_prob));
}

// lesson.json's "figures.trained": runs the text quotes measured, not estimated (a schedule's bubble
// on the virtual clock): each trained for a few steps, nothing saved, and its schedule summary printed
// (clock/schedule_summary.h, the lines `train` closes with) with each stage's peak activations.
void print_trained_runs(const std::vector<Compared>& trained) {
  constexpr int kSteps = 3;  // step 1 allocates: the summary takes the median of steps 2-3
  for (const Compared& c : trained) {
    std::printf("trained with %s", c.change.c_str());
    if (!c.refused.empty()) {
      std::printf(": not a run here: %s\n", c.refused.c_str());
      continue;
    }
    RunConfig config = c.run;
    config.steps = kSteps;
    config.eval_every = 0;
    config.clock = ClockKind::virtual_device;
    config.save_dir.clear();
    config.metrics_out.clear();
    std::printf(" (%d steps, virtual clock):\n", kSteps);
    ScheduleEvents events;
    Trainer trainer(config, &events);
    trainer.run([](const StepMetrics&) {});
    const Layout& l = config.layout;
    const ScheduleSummary summary =
        summarize_schedule(events.events(), l.dp() * l.cp() * l.tp(), l.pp(), config.micro_batches);
    for (const std::string& line : schedule_summary_lines(summary, "virtual")) std::printf("  %s\n", line.c_str());
    std::string peaks;
    for (int stage = 0; stage < l.pp(); ++stage) {  // rank `stage` of replica 0 (stage = rank / dp, dp 1 here)
      const int rank = stage * l.dp() * l.cp() * l.tp();
      peaks +=
          (stage == 0 ? "" : ", ") + mib(static_cast<double>(trainer.ledger(rank).peak()[MemoryCategory::activations]));
    }
    std::printf("  peak activations per stage: %s\n", peaks.c_str());
  }
}

}  // namespace

void check_lesson_figures(std::string_view lesson, const RunConfig& run) {
  (void)compared_runs(lesson, run);
  (void)compared_runs(lesson, run, "trained");
}

void print_lesson_figures(std::string_view lesson, const RunConfig& run) {
  const std::vector<Compared> compared = compared_runs(lesson, run);
  Figures figures;
  try {
    figures = figures_of(run);
  } catch (const std::exception& e) {  // a run the engine trains and the estimator does not model
    std::printf("\n(the lesson's figures: the estimator does not model this run: %s)\n", e.what());
    print_trained_runs(compared_runs(lesson, run, "trained"));
    return;
  }
  const ModelConfig model = run_model_config(run);
  std::printf("\n== The lesson's figures, each beside its formula (the estimator's bytes: equal to the ledger's) ==\n");
  std::printf("this run: %s, Ψ = %s parameters; the loss starts near ln(vocab) = ln %d = %.2f (even odds)\n",
              run.model.c_str(), grouped(figures.parameters).c_str(), model.vocab,
              std::log(static_cast<double>(model.vocab)));
  if (figures.active != figures.parameters)
    std::printf(
        "  %-17s %s of Ψ: a token's matmuls read its top-%d experts of %d (the compute follows these, the "
        "memory Ψ)\n",
        "active parameters", grouped(figures.active).c_str(), model.top_k, model.experts);
  print_settings(run, model);
  print_figures(figures, nullptr);
  for (const Compared& c : compared) {
    std::printf("with %s:%s\n", c.change.c_str(), c.refused.empty() ? "" : (" not a run here: " + c.refused).c_str());
    try {
      if (c.refused.empty()) print_figures(figures_of(c.run), &figures);
    } catch (const std::exception& e) {
      std::printf("  (the estimator does not model it: %s)\n", e.what());
    }
  }
  print_trained_runs(compared_runs(lesson, run, "trained"));
}

}  // namespace shardscope::cli
