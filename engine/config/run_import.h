// SPDX-License-Identifier: GPL-3.0-or-later
// A training run set from the configs practitioners already have: a DeepSpeed
// JSON (`train --deepspeed`) or an accelerate YAML (`train --accelerate`),
// read by io/deepspeed_config.h and io/accelerate_config.h. The file's values
// go onto a RunConfig (the CLI then applies its flags on top); what the run
// took is one summary line; unknown keys are warnings by name; keys the engine
// cannot honour (offload, an optimizer other than Adam/AdamW, a scheduler the
// LR schedule cannot follow, ...) are a ConfigError naming the file and key.
// The estimator reads the same files through plan_values_from_deepspeed /
// plan_values_from_accelerate: the same rows, a planner's tolerance.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/run_config.h"
#include "config/run_schema.h"
#include "io/accelerate_config.h"
#include "io/deepspeed_config.h"

namespace shardscope {

struct RunImport {
  std::string summary;                // "from ds.json: batch 32 = micro 4 x accum 2 x dp 4, ZeRO-2, ..."
  std::vector<std::string> warnings;  // unknown keys and other notes, each naming its key
  std::vector<std::string> fields;    // the run-config keys (config/run_schema.h) the file set
  // (run-config key, where it came from: "acc.yaml: megatron_lm_config.megatron_lm_pp_degree"), as
  // SettingsPatch::origin credits the estimator's settings: a refusal names the file and its key.
  std::vector<std::pair<std::string, std::string>> origin;
};

// Sets `config` from a DeepSpeed config. The batch arithmetic uses config.layout.dp()
// (train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp,
// as DeepSpeed checks it).
RunImport import_deepspeed_run(const DeepSpeedConfig& ds, RunConfig& config);

// Sets `config` from an accelerate config: dp from num_processes (over config.layout.pp())
// unless `keep_dp` (the command line gave --dp), then the DeepSpeed JSON it points to.
// `pp_from` names what set config.layout.pp() in a refusal ("--pp", or "--schedule-file F (its rows)").
RunImport import_accelerate_run(const AccelerateConfig& acc, RunConfig& config, bool keep_dp,
                                const std::string& pp_from = "--pp");

// The same files read for the estimator's surfaces (`estimate`, the memory
// planner): every value a file sets, in the order they apply. A planner takes
// what a run refuses: offload (the rows offload_optimizer, offload_params),
// FSDP as the ZeRO stage it shards like, fp8 as bf16 (with a warning), and the
// batch keys as they stand (micro_batch, accum, batch: the estimator derives
// the missing one once the command line has set dp).
std::vector<SchemaValue> plan_values_from_deepspeed(const DeepSpeedConfig& ds, std::vector<std::string>& warnings);
std::vector<SchemaValue> plan_values_from_accelerate(const AccelerateConfig& acc, std::vector<std::string>& warnings);

struct PlanImport {
  std::vector<std::vector<SchemaValue>> files;  // one list per file, in the order to apply
  std::vector<std::string> warnings;          // every file's unknown keys and notes
  int nodes = 0;                              // accelerate's num_machines; 0 when no file says
};

// Loads the files given (empty path: none): the accelerate YAML, the DeepSpeed
// JSON it names, then `deepspeed_path`. ConfigError / FormatError name the file.
PlanImport import_plan_files(const std::string& accelerate_path, const std::string& deepspeed_path);

}  // namespace shardscope
