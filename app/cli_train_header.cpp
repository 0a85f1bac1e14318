// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_train_header.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include "model/model_config.h"
#include "plan/sharding_plan.h"
#include "train/checkpoint.h"

namespace shardscope::cli {

// The model, the data and the layout of the run, before its first step.
void print_run_header(const RunConfig& config, Trainer& trainer) {
  for (const std::string& note : {trainer.device_note(), trainer.resume_note()})
    if (!note.empty()) std::printf("note: %s\n", note.c_str());
  const auto& model = trainer.model();
  // The whole model's parameters; a rank holds only its stage's (printed apart).
  std::printf("model %s (%s): %lld parameters, C=%d L=%d H=%d vocab=%d\n",
              config.init_from.empty() ? config.model.c_str() : config.init_from.c_str(),
              std::string(model_kind_name(model.config().kind)).c_str(),
              static_cast<long long>(trainer.model_parameters()), model.config().channels, model.config().layers,
              model.config().heads, model.config().vocab);
  if (config.layout.pp() > 1)
    std::printf("pipeline: %s%s\n", stage_parameters_text(trainer.plan()).c_str(),
                config.layout.tp() > 1 ? " (on each tensor-parallel rank)" : "");
  if (!trainer.init_note().empty()) std::printf("init: %s\n", trainer.init_note().c_str());
  std::printf("data %s: %lld training / %lld validation tokens (%s)\n", trainer.dataset().path().c_str(),
              static_cast<long long>(trainer.dataset().tokens(Split::train)),
              static_cast<long long>(trainer.dataset().tokens(Split::validation)),
              trainer.dataset().token_kind().c_str());
  std::printf(
      "global batch %d x seq %d = %d tokens per step; %d rank%s (dp %d %s ZeRO-%d x pp %d %s%s); "
      "per rank: micro-batch %d, %d micro-batch%s x %d accumulation step%s; %lld steps; %s; backend %s\n",
      config.batch, config.seq, config.batch * config.seq, config.world_size(), config.world_size() > 1 ? "s" : "",
      config.layout.dp(), std::string(data_parallel_mode_name(config.dp_mode)).c_str(), config.zero_stage,
      config.layout.pp(),
      config.schedule_file.empty() ? pipeline_schedule_name(config.schedule) : config.schedule_file.c_str(),
      ((config.layout.cp() > 1 ? " x cp " + std::to_string(config.layout.cp()) + " " + config.cp_split : "") +
       (config.layout.tp() > 1 ? " x tp " + std::to_string(config.layout.tp()) : "") +
       (config.expert_parallel > 1 ? ", experts over ep " + std::to_string(config.expert_parallel) : ""))
          .c_str(),
      config.micro_batch_size(), config.micro_batches, config.micro_batches > 1 ? "es" : "", config.accum,
      config.accum > 1 ? "s" : "", static_cast<long long>(config.steps),
      std::string(precision_name(config.precision)).c_str(), trainer.placement().c_str());
  if (const std::string blas = trainer.blas_kernel_line(); !blas.empty()) std::printf("%s\n", blas.c_str());
  std::printf("clock %s\n", trainer.clock_text().c_str());
  if (!trainer.resumed_from().empty()) {
    std::printf("resumed from %s at step %lld\n", trainer.resumed_from().c_str(),
                static_cast<long long>(trainer.steps_done()));
    // A save killed or failed before its commit: never resumed from, said once.
    for (const std::string& torn : torn_checkpoints(std::filesystem::path(trainer.resumed_from()).parent_path()))
      std::printf("checkpoint: ignored %s: a save that never committed (no manifest, not renamed)\n", torn.c_str());
  }
  std::fflush(stdout);
}

}  // namespace shardscope::cli
