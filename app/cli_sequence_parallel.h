// SPDX-License-Identifier: GPL-3.0-or-later
// `train --sequence-parallel`'s activation line: what sequence parallelism took
// off rank 0's activations, measured, against tensor parallelism alone, beside
// Korthikanti et al.'s per-layer ratio.
#pragma once

#include "config/run_config.h"

namespace shardscope {
class Trainer;
}

namespace shardscope::cli {

// Prints nothing without sequence parallelism or when rank 0 is in another process.
void print_sequence_parallel_activations(const Trainer& trainer, const RunConfig& config);

}  // namespace shardscope::cli
