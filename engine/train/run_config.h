// SPDX-License-Identifier: GPL-3.0-or-later
// Everything that defines a training run, in one struct: the CLI fills it from
// flags, the GUI from its panel, and both go through the same validation.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

struct RunConfig {
  std::string model = "gpt-tiny";  // preset name
  std::int64_t steps = 200;        // optimizer steps
  int batch = 16;                  // sequences per optimizer step (the global batch)
  int seq = 64;                    // tokens per sequence (T)
  float lr = 1e-3f;                // peak learning rate
  float min_lr_ratio = 0.1f;       // cosine decay ends at lr * min_lr_ratio
  std::int64_t warmup = -1;        // warm-up steps; -1: min(100, steps / 10)
  float weight_decay = 0.1f;
  float grad_clip = 1.0f;          // max global gradient norm; 0 disables clipping
  std::uint64_t seed = 1337;
  std::string data;                // text file; empty: the shipped default corpus
  std::int64_t eval_every = 0;     // evaluate every N steps (and at the end); 0: never
  int eval_batches = 4;            // validation batches per evaluation
  int threads = 0;                 // CPU threads; 0: all cores
  std::string metrics_out;         // JSONL file, one object per step; empty: none

  std::int64_t warmup_steps() const;
};

// Throws ConfigError naming the first bad field by its CLI flag (e.g. "--steps").
void validate_run_config(const RunConfig& config);

}  // namespace shardscope
