// SPDX-License-Identifier: GPL-3.0-or-later
// ZB-V's bubble (Qi et al. 2024, sec. 6; plan/zb_v_schedule.h) beside the
// other schedules' formulas (clock/pipeline_bubble.h), in a header of its own.
#pragma once

#include "clock/schedule_summary.h"

namespace shardscope {

// ZB-V's floor, with T_F, T_B, T_W the boxes of one chunk (half a stage's
// layers). Every stage runs 2m F, B and W; the paper's V order leaves no
// wait inside the step when T_F = T_B = T_W ("zero bubble"), only the ends:
// the last stage waits (p - 1) T_F for the first micro-batch to come down
// chunk 0, and stage 0 finishes its W's that much before the others. So
//   (p - 1) T_F / (2m (T_F + T_B + T_W) + (p - 1) T_F),
// ZB-H2's parallelogram with chunk times: half of ZB-H2's at the same m.
// With unequal times the fixed order waits inside the steady rounds too
// (the simulator shows it: ARCHITECTURE.md). Throws ConfigError naming --pp
// or --micro-batches unless both are at least 1.
double zb_v_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                            double weight_time);
// The same, paced by the slowest stage (schedule_summary.h's zb_h1_bubble_paced).
double zb_v_bubble_paced(const PipelineBubble& b);

}  // namespace shardscope
