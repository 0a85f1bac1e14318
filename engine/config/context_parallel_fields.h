// SPDX-License-Identifier: GPL-3.0-or-later
// Context parallelism's rows of the run-config schema (--cp, --cp-split) and
// its rules: what trains with it, and what is refused by name until it does.
#pragma once

#include <vector>

#include "config/run_config.h"
#include "config/run_schema.h"
#include "model/model_config.h"

namespace shardscope {

void add_context_parallel_fields(std::vector<RunField>& fields);

// Throws FieldError naming the flags and the numbers.
void validate_context_parallel(const RunConfig& config, const ModelConfig& model);

}  // namespace shardscope
