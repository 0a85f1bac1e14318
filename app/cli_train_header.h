// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli train's header: the model, the data, the layout, the BLAS kernel,
// the clock and any resume, printed once before the first step.
#pragma once

#include "config/run_config.h"
#include "train/trainer.h"

namespace shardscope::cli {

void print_run_header(const RunConfig& config, Trainer& trainer);

}  // namespace shardscope::cli
