// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/run_config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/model_config.h"

namespace shardscope {

std::int64_t RunConfig::warmup_steps() const {
  return warmup >= 0 ? warmup : std::min<std::int64_t>(100, steps / 10);
}

void validate_run_config(const RunConfig& c) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw ConfigError(message);
  };
  const ModelConfig model = find_model_preset(c.model);
  require(c.steps > 0, "--steps must be at least 1 (got " + std::to_string(c.steps) + ")");
  require(c.batch > 0, "--batch must be at least 1 (got " + std::to_string(c.batch) + ")");
  require(c.seq > 0, "--seq must be at least 1 (got " + std::to_string(c.seq) + ")");
  require(c.seq <= model.max_seq, "--seq " + std::to_string(c.seq) + " exceeds the maximum sequence length of " +
                                      model.name + " (" + std::to_string(model.max_seq) + ")");
  require(std::isfinite(c.lr) && c.lr > 0.0f && c.lr < 10.0f, "--lr must be in (0, 10) (got " + std::to_string(c.lr) + ")");
  require(c.min_lr_ratio >= 0.0f && c.min_lr_ratio <= 1.0f, "--min-lr-ratio must be in [0, 1]");
  require(c.warmup >= -1, "--warmup must be 0 or more");
  require(c.weight_decay >= 0.0f && std::isfinite(c.weight_decay), "--weight-decay must be 0 or more");
  require(c.grad_clip >= 0.0f && std::isfinite(c.grad_clip), "--grad-clip must be 0 (off) or more");
  require(c.eval_every >= 0, "--eval-every must be 0 (off) or more");
  require(c.eval_batches > 0, "--eval-batches must be at least 1");
  require(c.threads >= 0 && c.threads <= 1024, "--threads must be between 0 (all cores) and 1024");
}

}  // namespace shardscope
