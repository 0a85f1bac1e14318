// SPDX-License-Identifier: GPL-3.0-or-later
// A training run set from the configs practitioners already have: a DeepSpeed
// JSON (`train --deepspeed`) or an accelerate YAML (`train --accelerate`),
// read by io/deepspeed_config.h and io/accelerate_config.h. The file's values
// go onto a RunConfig (the CLI then applies its flags on top); what the run
// took is one summary line; unknown keys are warnings by name; keys the engine
// cannot honour (offload, an optimizer other than Adam/AdamW, a scheduler the
// LR schedule cannot follow, ...) are a ConfigError naming the file and key.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "io/accelerate_config.h"
#include "io/deepspeed_config.h"

namespace shardscope {

struct RunImport {
  std::string summary;                // "from ds.json: batch 32 = micro 4 x accum 2 x dp 4, ZeRO-2, ..."
  std::vector<std::string> warnings;  // unknown keys and other notes, each naming its key
  std::vector<std::string> fields;    // the run-config keys (config/run_schema.h) the file set
};

// Sets `config` from a DeepSpeed config. The batch arithmetic uses config.layout.dp()
// (train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp,
// as DeepSpeed checks it).
RunImport import_deepspeed_run(const DeepSpeedConfig& ds, RunConfig& config);

// Sets `config` from an accelerate config: dp from num_processes (over config.layout.pp())
// unless `keep_dp` (the command line gave --dp), then the DeepSpeed JSON it points to.
RunImport import_accelerate_run(const AccelerateConfig& acc, RunConfig& config, bool keep_dp);

}  // namespace shardscope
