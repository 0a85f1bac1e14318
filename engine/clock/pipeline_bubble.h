// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline bubble by formula, written once, in the lowest layer that needs
// it: the schedule summary here, the schedules (parallel/), the estimator and
// the views ask here.
#pragma once

namespace shardscope {

// Idle fraction of a step under GPipe (and under 1F1B, which has the same
// bubble) with equal stages and free communication: (p - 1) / (m + p - 1).
// GPipe (Huang et al. 2019) states it as O((K - 1) / (M + K - 1)); Narayanan et
// al. 2021 (Megatron-LM) give bubble / ideal time = (p - 1) / m, the same thing
// measured against the busy time instead of the whole step. Throws ConfigError
// naming --pp or --micro-batches unless both are at least 1.
double gpipe_bubble_fraction(int stages, int micro_batches);

}  // namespace shardscope
