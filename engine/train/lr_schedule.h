// SPDX-License-Identifier: GPL-3.0-or-later
// Learning rate: linear warm-up from lr/warmup to lr over `warmup` steps, then
// cosine decay to min_lr at the last step (Loshchilov & Hutter 2017, SGDR
// without restarts):  lr_t = min_lr + (lr - min_lr) (1 + cos(pi p)) / 2,
// p = (t - warmup) / (steps - warmup).
#pragma once

#include <cmath>
#include <cstdint>

namespace shardscope {

struct LrSchedule {
  float lr = 1e-3f;
  float min_lr = 1e-4f;
  std::int64_t warmup = 0;
  std::int64_t steps = 1;

  float at(std::int64_t step) const {  // step counts from 0
    if (step < warmup) return lr * static_cast<float>(step + 1) / static_cast<float>(warmup);
    if (steps <= warmup + 1) return lr;
    const double p = static_cast<double>(step - warmup) / static_cast<double>(steps - 1 - warmup);
    const double pi = 3.14159265358979323846;
    return min_lr + static_cast<float>((lr - min_lr) * 0.5 * (1.0 + std::cos(pi * std::min(1.0, p))));
  }
};

}  // namespace shardscope
