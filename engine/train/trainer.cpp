// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/trainer.h"

#include <chrono>
#include <exception>
#include <thread>

#include "core/error.h"
#include "core/thread_pool.h"
#include "data/default_corpus.h"
#include "ops/backend.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/grid.h"
#include "parallel/in_process_communicator.h"
#include "parallel/zero.h"
#include "train/adamw.h"

namespace shardscope {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::unique_ptr<TextDataset> load_dataset(const RunConfig& config) {
  if (config.data.empty())
    return std::make_unique<TextDataset>(
        TextDataset::from_text(std::string(default_corpus()), config.seq, "<default corpus>"));
  return std::make_unique<TextDataset>(config.data, config.seq);
}

std::int64_t count_scored(const std::vector<std::int32_t>& targets) {
  std::int64_t n = 0;
  for (std::int32_t t : targets) n += t >= 0 ? 1 : 0;
  return n;
}

// Rows [first, first + count) of a (rows, T) token matrix.
std::vector<std::int32_t> rows_of(const std::vector<std::int32_t>& all, int T, std::int64_t first, int count) {
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(first * T);
  return {begin, begin + static_cast<std::ptrdiff_t>(count) * T};
}
}  // namespace

struct Trainer::Rank {
  int rank = 0, dp_rank = 0, stage = 0;
  MemoryLedger ledger;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<AdamW> optimizer;  // null on the replicas of naive DataParallel
  std::unique_ptr<Communicator> dp_comm;
  std::unique_ptr<DdpReducer> reducer;
  ZeroPartition partition{};
  Buffer comm_buffer;  // naive: rank 0's gradient gather buffer; ZeRO: padded gather staging
  // Filled by rank_step:
  float loss_sum = 0.0f;
  std::int64_t global_scored = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0, grad_norm = 0;
  float lr = 0;
};

Trainer::Trainer(const RunConfig& config, EventSink* sink) : config_(config), sink_(sink) {
  validate_run_config(config_);
  const ModelConfig model_config = find_model_preset(config_.model);
  const Grid grid(config_.dp, config_.pp);
  dataset_ = load_dataset(config_);
  world_ = InProcessWorld::create(grid.world_size(), sink_, &clock_);
  const int cores = config_.threads > 0 ? config_.threads : available_cores();
  const int threads_per_rank = std::max(1, cores / grid.world_size());
  const AdamWOptions adamw{0.9f, 0.95f, 1e-8f, config_.weight_decay};
  for (int r = 0; r < grid.world_size(); ++r) {
    auto rank = std::make_unique<Rank>();
    rank->rank = r;
    rank->dp_rank = grid.dp_rank_of(r);
    rank->stage = grid.stage_of(r);
    rank->backend = make_cpu_backend(CpuBackendOptions{threads_per_rank});
    rank->model = make_model(model_config, *rank->backend, rank->ledger);
    rank->model->init_weights(config_.seed);  // every replica starts equal, as after DDP's initial broadcast
    rank->model->set_checkpointing(config_.checkpoint);
    rank->model->set_event_sink(sink_, &clock_);
    const std::int64_t P = rank->model->parameter_count();
    rank->dp_comm = world_->communicator(r, grid.dp_group(rank->stage));
    if (config_.dp_mode == DataParallelMode::naive) {
      if (rank->dp_rank == 0) {
        rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, adamw);
        if (grid.dp() > 1)
          rank->comm_buffer = Buffer(rank->ledger, MemoryCategory::communication, grid.dp() * P * 4);
      }
    } else {
      rank->partition = make_zero_partition(P, grid.dp(), rank->dp_rank);
      if (config_.zero_stage >= 1) {
        rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, adamw,
                                                  rank->partition.begin, rank->partition.end);
        if (rank->partition.shard_size * grid.dp() != P)
          rank->comm_buffer = Buffer(rank->ledger, MemoryCategory::communication,
                                     rank->partition.shard_size * (grid.dp() + 1) * 4);
      } else {
        rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, adamw);
      }
      if (grid.dp() > 1)
        rank->reducer = std::make_unique<DdpReducer>(
            *rank->dp_comm,
            make_gradient_buckets(rank->model->layout(), static_cast<std::int64_t>(config_.bucket_mb * 1e6)));
    }
    ranks_.push_back(std::move(rank));
  }
  schedule_ = LrSchedule{config_.lr, config_.lr * config_.min_lr_ratio, config_.warmup_steps(), config_.steps};
}

Trainer::~Trainer() = default;

const Model& Trainer::model(int rank) const { return *ranks_.at(static_cast<std::size_t>(rank))->model; }
Model& Trainer::model(int rank) { return *ranks_.at(static_cast<std::size_t>(rank))->model; }
const MemoryLedger& Trainer::ledger(int rank) const { return ranks_.at(static_cast<std::size_t>(rank))->ledger; }
std::string Trainer::backend_name() const { return ranks_[0]->backend->name(); }

void Trainer::emit(const Event& event) {
  if (sink_ != nullptr) sink_->emit(event);
}

void Trainer::rank_step(Rank& rk) {
  const RunConfig& c = config_;
  const bool naive = c.dp_mode == DataParallelMode::naive;
  const int dp = c.dp, T = c.seq, mb = c.micro_batch();
  const std::int64_t step = steps_done_ + 1;
  const ModelKind kind = rk.model->config().kind;
  Model& model = *rk.model;
  CommTag tag{step, -1, -1};
  Event base;
  base.rank = rk.rank;
  base.stage = rk.stage;
  base.step = step;
  rk.forward_s = rk.backward_s = rk.optimizer_s = 0.0;

  // The global batch: every rank derives the same samples from (seed, step).
  // Naive DataParallel: only the master reads data; it scatters the micro-batches.
  BatchData global;
  if (!naive || rk.dp_rank == 0)
    global = dataset_->batch(kind, Split::train, c.seed, steps_done_, 0, c.batch, T);
  float scored = static_cast<float>(count_scored(global.targets));
  if (naive && dp > 1) {
    replicate_parameters(*rk.dp_comm, model.params(), model.parameter_count(), tag);
    rk.dp_comm->broadcast(&scored, 1, 0, tag);  // the master tells the replicas the loss denominator
  }
  rk.global_scored = static_cast<std::int64_t>(scored);
  const double loss_rows = static_cast<double>(rk.global_scored) / dp;  // DDP averages over dp afterwards

  model.zero_grads();
  rk.loss_sum = 0.0f;
  for (int a = 0; a < c.accum; ++a) {
    const bool last = a == c.accum - 1;
    tag.micro_batch = a;
    base.micro_batch = a;
    model.set_event_context(base);
    // Rank d's samples of micro-step a: [d * B/dp + a * mb, + mb).
    std::vector<std::int32_t> ids, targets;
    if (naive && dp > 1) {
      std::vector<std::int32_t> all_ids, all_targets;
      if (rk.dp_rank == 0) {
        for (int d = 0; d < dp; ++d) {
          const std::int64_t first = static_cast<std::int64_t>(d) * (c.batch / dp) + static_cast<std::int64_t>(a) * mb;
          auto i = rows_of(global.input_ids, T, first, mb), t = rows_of(global.targets, T, first, mb);
          all_ids.insert(all_ids.end(), i.begin(), i.end());
          all_targets.insert(all_targets.end(), t.begin(), t.end());
        }
      }
      scatter_tokens(*rk.dp_comm, all_ids, ids, static_cast<std::int64_t>(mb) * T, tag);
      scatter_tokens(*rk.dp_comm, all_targets, targets, static_cast<std::int64_t>(mb) * T, tag);
    } else {
      const std::int64_t first = static_cast<std::int64_t>(rk.dp_rank) * (c.batch / dp) + static_cast<std::int64_t>(a) * mb;
      ids = rows_of(global.input_ids, T, first, mb);
      targets = rows_of(global.targets, T, first, mb);
    }
    const Batch batch{mb, T, ids.data(), targets.data(), nullptr, nullptr};

    auto t0 = Clock::now();
    const std::int64_t f0 = clock_.now_ns();
    rk.loss_sum += model.forward(batch) * static_cast<float>(model.scored_rows());
    rk.forward_s += seconds_since(t0);
    Event span = base;
    span.kind = EventKind::compute_span;
    span.compute = ComputeKind::forward;
    span.start_ns = f0;
    span.end_ns = clock_.now_ns();
    emit(span);
    if (rk.rank == c.fail_rank && step == c.fail_step)
      throw std::runtime_error("injected failure (--inject-failure) in forward of step " + std::to_string(step));

    // DDP: only the last micro-step communicates (PyTorch's no_sync for the others).
    DdpReducer* reducer = last ? rk.reducer.get() : nullptr;
    const InProcessWorld* world = world_.get();
    model.set_gradient_ready_callback([reducer, world](std::int64_t frontier) {
      if (world->aborted()) throw CommAborted(world->abort_message());
      if (reducer != nullptr) reducer->gradients_ready(frontier);
    });
    t0 = Clock::now();
    span.start_ns = clock_.now_ns();
    if (reducer != nullptr) reducer->begin(model.grads(), tag);
    try {
      model.backward(loss_rows);
    } catch (...) {
      if (reducer != nullptr) {
        world_->abort(rk.rank, "rank " + std::to_string(rk.rank) + " failed in backward");
        try {
          reducer->finish();
        } catch (...) {
        }
      }
      throw;
    }
    if (reducer != nullptr) reducer->finish();
    rk.backward_s += seconds_since(t0);
    span.compute = ComputeKind::backward;
    span.end_ns = clock_.now_ns();
    emit(span);
  }

  // Combine gradients, update, and bring every replica up to date.
  auto t0 = Clock::now();
  base.micro_batch = -1;
  tag.micro_batch = -1;
  Event span = base;
  span.kind = EventKind::compute_span;
  span.compute = ComputeKind::optimizer;
  span.start_ns = clock_.now_ns();
  const std::int64_t P = model.parameter_count();
  if (dp > 1) {
    if (naive) reduce_gradients_to_master(*rk.dp_comm, model.grads(), P, rk.comm_buffer, tag);
    rk.dp_comm->all_reduce(&rk.loss_sum, 1, ReduceOp::sum, tag);
  }
  rk.lr = schedule_.at(steps_done_);
  if (rk.optimizer != nullptr) {
    rk.grad_norm = global_grad_norm(*rk.backend, model.grads(), P);
    rk.optimizer->step(model.params(), model.grads(), rk.lr, clip_factor(rk.grad_norm, c.grad_clip));
    if (c.zero_stage >= 1 && dp > 1) all_gather_parameter_shards(*rk.dp_comm, model.params(), rk.partition, rk.comm_buffer, tag);
  }
  rk.optimizer_s = seconds_since(t0);
  span.end_ns = clock_.now_ns();
  emit(span);

  Event memory = base;
  memory.kind = EventKind::memory_sample;
  memory.start_ns = memory.end_ns = clock_.now_ns();
  memory.memory = rk.ledger.current().bytes;
  emit(memory);
}

StepMetrics Trainer::step() {
  if (failed_) throw RankFailure("the run has stopped after a rank failed");
  const auto start = Clock::now();
  const auto world = static_cast<std::size_t>(world_size());
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < world; ++r) {
    threads.emplace_back([this, r, &errors] {
      try {
        rank_step(*ranks_[r]);
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        world_->abort(static_cast<int>(r), e.what());
      } catch (...) {
        errors[r] = std::current_exception();
        world_->abort(static_cast<int>(r), "unknown error");
      }
    });
  }
  for (auto& t : threads) t.join();
  // The cause is the first rank whose error is its own, not the abort it received.
  for (std::size_t r = 0; r < world; ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const CommAborted&) {
      continue;
    } catch (const std::exception& e) {
      failed_ = true;
      Event error;
      error.kind = EventKind::error;
      error.rank = static_cast<int>(r);
      error.level = LogLevel::error;
      error.start_ns = error.end_ns = clock_.now_ns();
      error.set_text("rank " + std::to_string(r) + ": " + e.what());
      emit(error);
      throw RankFailure("rank " + std::to_string(r) + " failed: " + e.what() + "; all " + std::to_string(world) +
                        " ranks stopped");
    }
  }
  for (std::size_t r = 0; r < world; ++r)
    if (errors[r]) {
      failed_ = true;
      throw RankFailure("the ranks stopped: " + world_->abort_message());
    }

  const Rank& r0 = *ranks_[0];
  ++steps_done_;
  StepMetrics m;
  m.step = steps_done_;
  m.loss = r0.global_scored > 0 ? r0.loss_sum / static_cast<float>(r0.global_scored) : 0.0f;
  m.lr = r0.lr;
  m.grad_norm = r0.grad_norm;
  m.forward_s = r0.forward_s;
  m.backward_s = r0.backward_s;
  m.optimizer_s = r0.optimizer_s;
  m.step_time_s = seconds_since(start);
  m.tokens_per_s = static_cast<double>(config_.batch) * config_.seq / m.step_time_s;
  if (config_.eval_every > 0 && (steps_done_ % config_.eval_every == 0 || steps_done_ == config_.steps))
    m.eval_loss = evaluate();
  m.memory = r0.ledger.current();
  m.memory_peak = r0.ledger.peak();
  for (const auto& rank : ranks_) m.rank_memory.push_back(rank->ledger.current());

  Event metrics;
  metrics.kind = EventKind::step_metrics;
  metrics.step = m.step;
  metrics.start_ns = metrics.end_ns = clock_.now_ns();
  metrics.loss = m.loss;
  metrics.lr = m.lr;
  metrics.grad_norm = static_cast<float>(m.grad_norm);
  metrics.tokens_per_s = static_cast<float>(m.tokens_per_s);
  metrics.has_eval_loss = m.eval_loss.has_value();
  metrics.eval_loss = m.eval_loss.value_or(0.0f);
  metrics.memory = m.memory.bytes;
  emit(metrics);
  return m;
}

float Trainer::evaluate() {
  Model& model = *ranks_[0]->model;
  const ModelKind kind = model.config().kind;
  double sum = 0.0;
  for (int i = 0; i < config_.eval_batches; ++i) {
    // Step index 0 for every evaluation: the same validation batches each time.
    const BatchData data = dataset_->batch(kind, Split::validation, config_.seed, 0,
                                           static_cast<std::int64_t>(i) * config_.batch, config_.batch, config_.seq);
    const Batch batch{data.B, data.T, data.input_ids.data(), data.targets.data(), nullptr, data.attention_mask.data()};
    sum += model.forward(batch);
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
