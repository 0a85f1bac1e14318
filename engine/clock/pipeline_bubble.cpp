// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/pipeline_bubble.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace shardscope {

double gpipe_bubble_fraction(int stages, int micro_batches) {
  if (stages < 1) throw ConfigError("--pp must be at least 1 (got " + std::to_string(stages) + ")");
  if (micro_batches < 1)
    throw ConfigError("--micro-batches must be at least 1 (got " + std::to_string(micro_batches) + ")");
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double interleaved_bubble_fraction(int stages, int micro_batches, int virtual_stages) {
  gpipe_bubble_fraction(stages, micro_batches);  // the same checks
  if (virtual_stages < 1)
    throw ConfigError("--virtual-stages must be at least 1 (got " + std::to_string(virtual_stages) + ")");
  return static_cast<double>(stages - 1) / (static_cast<double>(virtual_stages) * micro_batches + stages - 1);
}

double zb_h1_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                             double weight_time) {
  gpipe_bubble_fraction(stages, micro_batches);  // the same checks
  if (!(forward_time >= 0 && backward_input_time >= 0 && weight_time >= 0))
    throw std::invalid_argument("zb_h1_bubble_fraction: times must be >= 0");
  const double idle = std::max(0.0, (stages - 1) * (forward_time + backward_input_time - weight_time));
  const double work = micro_batches * (forward_time + backward_input_time + weight_time);
  return idle + work > 0 ? idle / (idle + work) : 0.0;
}

double zb_h2_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                             double weight_time) {
  // ZB-H1's formula with T_B = T_W: the idle (p - 1) T_F.
  const double work = backward_input_time + weight_time;
  return zb_h1_bubble_fraction(stages, micro_batches, forward_time, work / 2, work / 2);
}

}  // namespace shardscope
