// SPDX-License-Identifier: GPL-3.0-or-later
// The run-config schema's rows that only the estimator's surfaces have
// (`estimate`'s flags, the memory planner's controls): what a planner asks
// about a cluster and the trainer has no field for. Called by run_fields.cpp
// after RunConfig's rows; read them through config/run_schema.h.
#pragma once

#include <vector>

#include "config/run_schema.h"

namespace shardscope {

void add_plan_fields(std::vector<RunField>& fields);
// The parallel layout's rows (config/layout_fields.cpp), among RunConfig's.
void add_layout_fields(std::vector<RunField>& fields);
// The layout's rows the trainer does not have yet (sequence parallelism), among the estimator's.
void add_layout_plan_fields(std::vector<RunField>& fields);

}  // namespace shardscope
