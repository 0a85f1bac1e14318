// SPDX-License-Identifier: GPL-3.0-or-later
// `train`'s closing line for context parallelism: the bytes each rank's ring
// attention sent per layer per micro-batch, forward and backward, beside the
// formula (plan/context_parallel_traffic.h).
#pragma once

#include <cstdint>

#include "clock/schedule_summary.h"
#include "config/run_config.h"
#include "train/trainer.h"

namespace shardscope {

void print_context_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                    std::int64_t step);

}  // namespace shardscope
