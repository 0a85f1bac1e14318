// SPDX-License-Identifier: GPL-3.0-or-later
// `train`'s closing line for expert parallelism: the bytes MoE's all-to-all sent
// between each pair of ep ranks per MoE layer per micro-batch, from the events,
// beside the formula at the capacity's bound (plan/expert_parallel_traffic.h).
#pragma once

#include <cstdint>

#include "clock/schedule_summary.h"
#include "config/run_config.h"
#include "train/trainer.h"

namespace shardscope {

void print_expert_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                   std::int64_t step);

}  // namespace shardscope
