// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/pipeline_bubble.h"

#include <string>

#include "core/error.h"

namespace shardscope {

double gpipe_bubble_fraction(int stages, int micro_batches) {
  if (stages < 1) throw ConfigError("--pp must be at least 1 (got " + std::to_string(stages) + ")");
  if (micro_batches < 1)
    throw ConfigError("--micro-batches must be at least 1 (got " + std::to_string(micro_batches) + ")");
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace shardscope
