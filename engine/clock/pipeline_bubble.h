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

// Idle fraction of a step under ZB-H1 (Qi et al. 2024): each stage idles
// (p - 1)(T_F + T_B - T_W) beside its m (T_F + T_B + T_W) of work, where 1F1B
// idles (p - 1)(T_F + T_B + T_W), B and W together. Floored at 0 (the formula
// assumes T_W <= T_F + T_B). Throws ConfigError as gpipe_bubble_fraction, and
// std::invalid_argument for a negative time.
double zb_h1_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                             double weight_time);
// Idle fraction of a step under interleaved 1F1B (Narayanan et al. 2021,
// sec. 2.2.2): each stage holds v chunks of 1/v of its layers, so the fill and
// drain shrink to (p - 1)(t_f + t_b)/v beside m(t_f + t_b) of work:
// (p - 1) / (v·m + p - 1). Throws ConfigError as gpipe_bubble_fraction, and
// names --virtual-stages below 1.
double interleaved_bubble_fraction(int stages, int micro_batches, int virtual_stages);
// ZB-H2's floor: with up to 2p - 1 micro-batches in flight no stage idles
// inside the step but for the ends, the last stage waiting (p - 1) T_F for its
// first input and the first finishing that much earlier (the paper's
// parallelogram; it calls this zero bubble, skipping the optimizer step's
// synchronisation at the ends). (p-1) T_F / (m (T_F + T_B + T_W) + (p-1) T_F).
double zb_h2_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                             double weight_time);

}  // namespace shardscope
