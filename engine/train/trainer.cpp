// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/trainer.h"

#include <chrono>

#include "core/thread_pool.h"
#include "data/default_corpus.h"

namespace shardscope {

namespace {
std::unique_ptr<TextDataset> load_dataset(const RunConfig& config) {
  if (config.data.empty())
    return std::make_unique<TextDataset>(TextDataset::from_text(std::string(default_corpus()), config.seq,
                                                                "<default corpus>"));
  return std::make_unique<TextDataset>(config.data, config.seq);
}
}  // namespace

Trainer::Trainer(const RunConfig& config) : config_(config) {
  validate_run_config(config_);
  const ModelConfig model_config = find_model_preset(config_.model);
  backend_ = make_cpu_backend(CpuBackendOptions{config_.threads > 0 ? config_.threads : available_cores()});
  dataset_ = load_dataset(config_);
  model_ = make_model(model_config, *backend_, ledger_);
  model_->init_weights(config_.seed);
  optimizer_ = std::make_unique<AdamW>(model_->layout(), *backend_, ledger_,
                                       AdamWOptions{0.9f, 0.95f, 1e-8f, config_.weight_decay});
  schedule_ = LrSchedule{config_.lr, config_.lr * config_.min_lr_ratio, config_.warmup_steps(), config_.steps};
}

Trainer::~Trainer() = default;

StepMetrics Trainer::step() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const ModelKind kind = model_->config().kind;
  const BatchData data = dataset_->batch(kind, Split::train, config_.seed, steps_done_, 0, config_.batch, config_.seq);
  const Batch batch{data.B, data.T, data.input_ids.data(), data.targets.data(), nullptr, data.attention_mask.data()};

  auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

  StepMetrics m;
  model_->zero_grads();
  auto t = clock::now();
  m.loss = model_->forward(batch);
  m.forward_s = seconds_since(t);
  t = clock::now();
  model_->backward();
  m.backward_s = seconds_since(t);
  t = clock::now();
  m.grad_norm = global_grad_norm(*backend_, model_->grads(), model_->parameter_count());
  m.lr = schedule_.at(steps_done_);
  optimizer_->step(model_->params(), model_->grads(), m.lr, clip_factor(m.grad_norm, config_.grad_clip));
  m.optimizer_s = seconds_since(t);
  ++steps_done_;

  m.step = steps_done_;
  m.step_time_s = seconds_since(start);
  m.tokens_per_s = static_cast<double>(config_.batch) * config_.seq / m.step_time_s;
  if (config_.eval_every > 0 && (steps_done_ % config_.eval_every == 0 || steps_done_ == config_.steps))
    m.eval_loss = evaluate();
  m.memory = ledger_.current();
  m.memory_peak = ledger_.peak();
  return m;
}

float Trainer::evaluate() {
  const ModelKind kind = model_->config().kind;
  double sum = 0.0;
  for (int i = 0; i < config_.eval_batches; ++i) {
    // Step index 0 for every evaluation: the same validation batches each time.
    const BatchData data = dataset_->batch(kind, Split::validation, config_.seed, 0,
                                           static_cast<std::int64_t>(i) * config_.batch, config_.batch, config_.seq);
    const Batch batch{data.B, data.T, data.input_ids.data(), data.targets.data(), nullptr, data.attention_mask.data()};
    sum += model_->forward(batch);
  }
  return static_cast<float>(sum / config_.eval_batches);
}

void Trainer::run(const std::function<void(const StepMetrics&)>& on_step, const std::atomic<bool>* stop) {
  while (steps_done_ < config_.steps) {
    if (stop != nullptr && stop->load()) return;
    const StepMetrics m = step();
    if (on_step) on_step(m);
  }
}

}  // namespace shardscope
