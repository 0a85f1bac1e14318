// SPDX-License-Identifier: GPL-3.0-or-later
// The single-rank training loop: batch, forward, backward, clip, AdamW, with a
// warm-up + cosine learning rate and periodic evaluation on the held-out split.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "core/memory_ledger.h"
#include "data/text_dataset.h"
#include "model/model.h"
#include "ops/backend.h"
#include "train/adamw.h"
#include "train/lr_schedule.h"
#include "train/run_config.h"

namespace shardscope {

struct StepMetrics {
  std::int64_t step = 0;       // optimizer steps done, from 1
  float loss = 0.0f;           // training loss of this step's batch, before the update
  float lr = 0.0f;             // learning rate used by this step
  double grad_norm = 0.0;      // global L2 norm before clipping
  double tokens_per_s = 0.0;   // tokens of this step / wall time of this step
  double step_time_s = 0.0;
  double forward_s = 0.0;      // parts of step_time_s: forward (with the loss),
  double backward_s = 0.0;     // backward,
  double optimizer_s = 0.0;    // gradient norm, clipping and the AdamW update
  std::optional<float> eval_loss;  // mean validation loss, on evaluation steps
  MemoryBytes memory;          // ledger bytes by category after the step
  MemoryBytes memory_peak;     // peak bytes by category so far
};

class Trainer {
 public:
  // Validates the config (ConfigError names the flag) and loads the data.
  explicit Trainer(const RunConfig& config);
  ~Trainer();

  // Runs config.steps steps, calling on_step after each. Returns early when
  // *stop becomes true (checked between steps).
  void run(const std::function<void(const StepMetrics&)>& on_step, const std::atomic<bool>* stop = nullptr);
  // One optimizer step; returns its metrics.
  StepMetrics step();
  // Mean loss over config.eval_batches fixed validation batches.
  float evaluate();

  const RunConfig& config() const { return config_; }
  const Model& model() const { return *model_; }
  Model& model() { return *model_; }
  const MemoryLedger& ledger() const { return ledger_; }
  const TextDataset& dataset() const { return *dataset_; }
  std::int64_t steps_done() const { return steps_done_; }
  std::string backend_name() const { return backend_->name(); }

 private:
  RunConfig config_;
  MemoryLedger ledger_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TextDataset> dataset_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<AdamW> optimizer_;
  LrSchedule schedule_;
  std::int64_t steps_done_ = 0;
};

}  // namespace shardscope
