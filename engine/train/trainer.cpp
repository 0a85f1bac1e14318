// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/trainer.h"

#include <array>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <thread>

#include "core/caching_device_memory.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "data/default_corpus.h"
#include "estimate/formula_text.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "ops/backend.h"
#include "ops/device.h"
#include "ops/nccl.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/grid.h"
#include "parallel/in_process_communicator.h"
#include "parallel/nccl_communicator.h"
#include "parallel/pipeline_parallel.h"
#include "parallel/zero.h"
#include "parallel/zero_storage.h"
#include "train/adamw.h"
#include "train/trainer_rank.h"

namespace shardscope {

using trainer_detail::Clock;
using trainer_detail::seconds_since;

namespace {
std::unique_ptr<TextDataset> load_dataset(const RunConfig& config) {
  if (config.data.empty())
    return std::make_unique<TextDataset>(
        TextDataset::from_text(std::string(default_corpus()), config.seq, "<default corpus>"));
  return std::make_unique<TextDataset>(config.data, config.seq);
}

// The estimator's bytes per rank for this run (estimate/memory_model.h), for
// out-of-memory errors; empty for a layout it cannot express.
std::vector<MemoryBytes> predict_memory(const RunConfig& config, const ModelConfig& model_config) {
  std::vector<MemoryBytes> predicted;
  try {
    const MemoryEstimate estimate =
        estimate_memory(model_shape_from_config(model_config, config.model), settings_for_run(config));
    for (const RankMemory& rank : estimate.ranks) predicted.push_back(rank.bytes);
  } catch (const std::exception&) {  // an error about the run itself comes from the run, not from here
    predicted.clear();
  }
  return predicted;
}

}  // namespace

Trainer::Trainer(const RunConfig& config, EventSink* sink, RankDeviceFactory devices) : config_(config), sink_(sink) {
  validate_run_config(config_);
  const ModelConfig model_config = find_model_preset(config_.model);
  const Grid grid(config_.dp, config_.pp);
  dataset_ = load_dataset(config_);
  world_ = InProcessWorld::create(grid.world_size(), sink_, &clock_);
  // --device cuda: the GPUs if usable, else the CPU, saying why once.
  if (!devices && config_.device == "cuda") {
    const DeviceProbe probe = probe_cuda();
    if (!probe.available()) {
      device_note_ = "--device cuda: " + probe.reason + "; training on the CPU instead";
    } else {
      for (const int g : config_.gpus)
        if (g >= static_cast<int>(probe.gpus.size()))
          throw ConfigError("--gpus: GPU " + std::to_string(g) + " does not exist (" +
                            std::to_string(probe.gpus.size()) + " found)");
      const std::vector<int> gpus = config_.gpus;
      const bool several = grid.world_size() > 1;
      // Mixed precision multiplies 16-bit operands on the tensor cores, as torch.autocast does.
      const std::string matmul(precision_name(config_.precision));
      devices = [gpus, several, matmul](int r) {
        const int gpu = gpus.size() == 1 ? gpus.front() : gpus[static_cast<std::size_t>(r)];
        RankDevice d;
        d.backend = make_cuda_backend(gpu, matmul);
        // Blocks are zeroed on the rank's own stream: an allocation never waits for other ranks' work.
        d.memory = make_cuda_device_memory(gpu, d.backend.get());
        if (several) d.comm_backend = make_cuda_backend(gpu);
        d.cuda_stream = cuda_stream(*d.backend);
        return d;
      };
    }
  }
  // One GPU listed: every rank shares it (in-process communicator, device
  // copies). One per rank: each rank on its own GPU, NCCL between them.
  if (devices && config_.device == "cuda" && config_.gpus.size() > 1) {
    const NcclAvailability nccl = probe_nccl();
    if (!nccl.available)
      throw ConfigError("--gpus: one rank per GPU needs NCCL, which is unavailable (" + nccl.reason +
                        "); list one GPU (--gpus " + std::to_string(config_.gpus.front()) + ") and the ranks share it");
    nccl_ = std::make_unique<NcclWorld>(config_.gpus, world_, sink_, &clock_);
  }
  // The estimator's bytes (for out-of-memory messages) for the kernels the ranks
  // really got: a --device cuda run that fell back to the CPU keeps T x T attention.
  RunConfig predicted_for = config_;
  if (!devices) predicted_for.device = "cpu";
  predicted_ = predict_memory(predicted_for, model_config);
  const int cores = config_.threads > 0 ? config_.threads : available_cores();
  const int threads_per_rank = std::max(1, cores / grid.world_size());
  const AdamWOptions adamw{0.9f, 0.95f, 1e-8f, config_.weight_decay};
  const PipelineSchedule schedule = make_pipeline_schedule(config_.schedule, grid.pp(), config_.micro_batches);
  // Each stage keeps as many micro-batches' activations as its schedule has in flight.
  const PipelineTimeline timeline = simulate_pipeline_schedule(schedule, 1.0, 2.0);
  std::vector<int> all(static_cast<std::size_t>(grid.world_size()));
  for (int r = 0; r < grid.world_size(); ++r) all[static_cast<std::size_t>(r)] = r;
  for (int r = 0; r < grid.world_size(); ++r) {
    try {
      auto rank = std::make_unique<Rank>();
      rank->rank = r;
      rank->dp_rank = grid.dp_rank_of(r);
      rank->stage = grid.stage_of(r);
      if (devices) {
        RankDevice device = devices(r);
        rank->device_memory = std::move(device.memory);
        rank->ledger.set_device_memory(rank->device_memory.get());
        rank->backend = std::move(device.backend);
        rank->comm_backend = std::move(device.comm_backend);
        rank->cuda_stream = device.cuda_stream;
        // Ranks sharing the device exchange buffers through it (the in-process
        // communicator's device copies); host values through its *_host calls.
        rank->comm_device =
            CommDevice{rank->backend.get(), rank->comm_backend ? rank->comm_backend.get() : rank->backend.get(),
                       rank->device_memory.get()};
      } else {
        if (config_.test_device_capacity > 0) {
          rank->device_memory =
              std::make_unique<CachingDeviceMemory>(std::make_unique<HostRawAllocator>(config_.test_device_capacity));
          rank->ledger.set_device_memory(rank->device_memory.get());
        }
        rank->backend = make_cpu_backend(CpuBackendOptions{threads_per_rank});
      }
      if (config_.profile_ops) {  // the collectives' device copies (comm_device) stay untimed
        rank->op_profile = std::make_unique<OpProfile>();
        rank->backend = make_profiling_backend(std::move(rank->backend), *rank->op_profile);
      }
      if (nccl_ != nullptr) {
        const NcclRank on{rank->backend.get(), rank->comm_backend.get(), rank->device_memory.get(), rank->cuda_stream};
        Rank* self = rank.get();
        rank->make_communicator = [this, self, on](const std::vector<int>& members) {
          return nccl_->communicator(self->rank, members, on);
        };
      } else {
        Rank* self = rank.get();
        rank->make_communicator = [this, self](const std::vector<int>& members) {
          return world_->communicator(self->rank, members, self->comm_device);
        };
      }
      const StageLayers layers = pipeline_stage_layers(model_config, grid.pp(), rank->stage);
      const int zero = config_.dp_mode == DataParallelMode::ddp ? config_.zero_stage : 0;
      const bool mixed = config_.mixed_precision();
      rank->dtype = config_.precision == Precision::fp16   ? DType::f16
                    : config_.precision == Precision::bf16 ? DType::bf16
                                                           : DType::f32;
      const auto esize = static_cast<std::int64_t>(dtype_size(rank->dtype));
      // The model's own fp32 buffers, unless ZeRO shards them or they are 16-bit.
      rank->model = make_model(model_config, layers, *rank->backend, rank->ledger,
                               ModelBuffers{/*parameters=*/!mixed && zero < 3, /*gradients=*/!mixed && zero < 2});
      rank->model->set_checkpointing(config_.checkpoint);
      rank->model->set_event_sink(sink_, &clock_);
      rank->model->set_activation_slots(
          std::max(1, timeline.peak_micro_batches_in_flight[static_cast<std::size_t>(rank->stage)]));
      rank->actions = schedule[static_cast<std::size_t>(rank->stage)];
      const std::int64_t P = rank->model->parameter_count();
      rank->dp_comm = rank->group(grid.dp_group(rank->stage));
      if (zero >= 2 || mixed) {
        rank->zero =
            std::make_unique<ZeroShardedStorage>(zero, rank->dtype, *rank->model, *rank->dp_comm, rank->ledger);
        rank->model->set_unit_storage(rank->zero.get());
      }
      // Every replica and stage starts as the one whole model would.
      if (zero >= 3 || mixed)
        rank->zero->init_parameters(config_.seed);
      else
        rank->model->init_weights(config_.seed);
      rank->scaler = std::make_unique<DynamicLossScaler>(config_.loss_scaler_options());
      rank->world_comm = rank->group(all);
      if (grid.pp() > 1) {
        rank->pp_comm = rank->group(grid.pipeline_group(rank->dp_rank));
        if (rank->stage == 0 || rank->stage == grid.pp() - 1)
          rank->embedding_comm =
              rank->group({grid.rank_at(0, rank->dp_rank), grid.rank_at(grid.pp() - 1, rank->dp_rank)});
      }
      AdamWOptions options = adamw;
      options.master_weights = mixed;
      if (config_.dp_mode == DataParallelMode::naive) {
        if (rank->dp_rank == 0) {
          rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, options);
          if (grid.dp() > 1)
            rank->comm_buffer = Buffer(rank->ledger, MemoryCategory::communication, grid.dp() * P * esize);
        }
      } else {
        rank->partition = make_zero_partition(P, grid.dp(), rank->dp_rank);
        if (zero >= 2) {
          rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, options,
                                                    rank->zero->shard_ranges());
        } else if (zero == 1) {
          rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, options,
                                                    rank->partition.begin, rank->partition.end);
          if (rank->partition.shard_size * grid.dp() != P)
            rank->comm_buffer = Buffer(rank->ledger, MemoryCategory::communication,
                                       rank->partition.shard_size * (grid.dp() + 1) * esize);
        } else {
          rank->optimizer = std::make_unique<AdamW>(rank->model->layout(), *rank->backend, rank->ledger, options);
        }
        if (grid.dp() > 1 && zero < 2)
          rank->reducer = std::make_unique<DdpReducer>(
              *rank->dp_comm,
              make_gradient_buckets(rank->model->layout(), static_cast<std::int64_t>(config_.bucket_mb * 1e6), esize));
      }
      if (mixed && rank->optimizer != nullptr)
        rank->optimizer->load_master(static_cast<const std::uint16_t*>(rank->zero->parameters()), rank->dtype,
                                     /*params_packed=*/zero >= 3);
      ranks_.push_back(std::move(rank));
    } catch (const OutOfMemory& e) {  // ranks are built one after another: none runs yet, none to stop
      throw OutOfMemory("rank " + std::to_string(r) + ": " + e.what() + predicted_text(r, e.category()), e.category(),
                        e.bytes());
    }
  }
  schedule_ = LrSchedule{config_.lr, config_.lr * config_.min_lr_ratio, config_.warmup_steps(), config_.steps};
  if (!device_note_.empty()) {
    Event note;
    note.kind = EventKind::log;
    note.level = LogLevel::warning;
    note.start_ns = note.end_ns = clock_.now_ns();
    note.set_text(device_note_);
    emit(note);
  }
  Event log;
  log.kind = EventKind::log;
  log.level = LogLevel::info;
  log.start_ns = log.end_ns = clock_.now_ns();
  log.set_text(config_.model + ": " + std::to_string(grid.world_size()) + " ranks (dp " + std::to_string(grid.dp()) +
               " x pp " + std::to_string(grid.pp()) + "), " + std::string(data_parallel_mode_name(config_.dp_mode)) +
               ", ZeRO-" + std::to_string(config_.zero_stage) + ", " + std::string(precision_name(config_.precision)) +
               ", micro-batch " + std::to_string(config_.micro_batch()) + ", " + placement());
  emit(log);
}

Trainer::~Trainer() = default;

const Model& Trainer::model(int rank) const {
  return *ranks_.at(static_cast<std::size_t>(rank))->model;
}
Model& Trainer::model(int rank) {
  return *ranks_.at(static_cast<std::size_t>(rank))->model;
}
const MemoryLedger& Trainer::ledger(int rank) const {
  return ranks_.at(static_cast<std::size_t>(rank))->ledger;
}
std::vector<unsigned char> Trainer::model_state_bytes(int rank) const {
  const Rank& rk = *ranks_.at(static_cast<std::size_t>(rank));
  std::vector<unsigned char> out;
  const auto append = [&](const void* data, std::int64_t bytes) {  // in the backend's memory
    if (data == nullptr || bytes <= 0) return;
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(bytes));
    rk.backend->download(out.data() + at, data, bytes);
  };
  const Model& model = *rk.model;
  if (rk.zero != nullptr && rk.zero->parameters() != nullptr) {
    const std::int64_t count = rk.zero->shards_parameters() ? rk.zero->shard_size() : model.parameter_count();
    append(rk.zero->parameters(), count * static_cast<std::int64_t>(dtype_size(rk.dtype)));
  } else {
    append(model.params(), model.parameter_count() * 4);
  }
  if (rk.optimizer != nullptr) {
    const AdamW& opt = *rk.optimizer;
    const std::int64_t bytes = opt.state_size() * 4;
    if (rk.dtype != DType::f32) append(opt.master(), bytes);
    append(opt.m(), bytes);
    append(opt.v(), bytes);
  }
  return out;
}

std::map<std::string, OpStats> Trainer::op_profile(int rank) const {
  const Rank& rk = *ranks_.at(static_cast<std::size_t>(rank));
  return rk.op_profile != nullptr ? rk.op_profile->snapshot() : std::map<std::string, OpStats>{};
}

void Trainer::reset_op_profiles() {
  for (auto& rk : ranks_)
    if (rk->op_profile != nullptr) rk->op_profile->reset();
}

std::string Trainer::backend_name() const {
  return ranks_[0]->backend->name();
}

std::string Trainer::placement() const {
  const std::size_t ranks = ranks_.size();
  if (ranks_[0]->backend->host_memory()) return backend_name() + " per rank";
  if (nccl_ == nullptr) return ranks > 1 ? backend_name() + ", shared by all " + std::to_string(ranks) + " ranks"
                                         : backend_name();
  std::string text;
  for (const auto& rank : ranks_) text += rank->backend->name() + ", ";
  return text + "one rank per GPU (NCCL)";
}

void Trainer::emit(const Event& event) {
  if (sink_ != nullptr) sink_->emit(event);
}

std::string Trainer::predicted_text(int rank, MemoryCategory category) const {
  if (rank < 0 || rank >= static_cast<int>(predicted_.size())) return {};
  const MemoryBytes& predicted = predicted_[static_cast<std::size_t>(rank)];
  return "; the estimator predicted " + binary_bytes(predicted.total()) + " for rank " + std::to_string(rank) + " (" +
         std::string(memory_category_name(category)) + " " + binary_bytes(predicted[category]) + ")";
}

void Trainer::on_every_rank(const std::function<void(Rank&)>& fn) {
  if (failed_) throw RankFailure("the run has stopped after a rank failed");
  const auto world = static_cast<std::size_t>(world_size());
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < world; ++r) {
    threads.emplace_back([this, r, &errors, &fn] {
      try {
        fn(*ranks_[r]);
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
      std::string cause = e.what();
      if (const auto* oom = dynamic_cast<const OutOfMemory*>(&e))
        cause += predicted_text(static_cast<int>(r), oom->category());
      Event error;
      error.kind = EventKind::error;
      error.rank = static_cast<int>(r);
      error.stage = ranks_[r]->stage;
      error.level = LogLevel::error;
      error.start_ns = error.end_ns = clock_.now_ns();
      error.set_text("rank " + std::to_string(r) + ": " + cause);
      emit(error);
      throw RankFailure("rank " + std::to_string(r) + " failed: " + cause + "; all " + std::to_string(world) +
                        " ranks stopped");
    }
  }
  for (std::size_t r = 0; r < world; ++r)
    if (errors[r]) {
      failed_ = true;
      throw RankFailure("the ranks stopped: " + world_->abort_message());
    }
}

StepMetrics Trainer::step() {
  const auto start = Clock::now();
  on_every_rank([this](Rank& rank) { rank_step(rank); });
  const Rank& r0 = *ranks_[0];
  ++steps_done_;
  StepMetrics m;
  m.step = steps_done_;
  m.loss = r0.global_scored > 0 ? r0.loss_sum / static_cast<float>(r0.global_scored) : 0.0f;
  m.lr = r0.lr;
  m.grad_norm = r0.grad_norm;
  m.loss_scale = r0.loss_scale;
  m.skipped = r0.skipped;
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
  metrics.loss_scale = m.loss_scale;
  metrics.skipped = m.skipped;
  metrics.tokens_per_s = static_cast<float>(m.tokens_per_s);
  metrics.has_eval_loss = m.eval_loss.has_value();
  metrics.eval_loss = m.eval_loss.value_or(0.0f);
  metrics.memory = m.memory.bytes;
  emit(metrics);
  return m;
}

void Trainer::rank_evaluate(Rank& rk, float* loss_and_rows) {
  // The validation samples in micro-batches of the training shape, dealt out to
  // the data-parallel ranks and run through the stages forward only.
  const int T = config_.seq, mb = config_.micro_batch(), pp = config_.pp;
  const std::int64_t chunks = static_cast<std::int64_t>(config_.eval_batches) * config_.batch / mb;
  Model& model = *rk.model;
  model.use_slot(0);
  CommTag tag{steps_done_, -1, -1};
  // Naive DataParallel: only the master holds the updated parameters (replicas
  // receive them at the next step's broadcast), so it evaluates alone.
  const bool naive = config_.dp_mode == DataParallelMode::naive;
  const int first = naive ? (rk.dp_rank == 0 ? 0 : static_cast<int>(chunks)) : rk.dp_rank;
  const int stride = naive ? 1 : config_.dp;
  for (std::int64_t k = first; k < chunks; k += stride) {
    // Step index 0 for every evaluation: the same validation batches each time.
    const BatchData data = dataset_->batch(model.config().kind, Split::validation, config_.seed, 0, k * mb, mb, T);
    const Batch batch{mb, T, data.input_ids.data(), data.targets.data(), nullptr, nullptr};
    const std::int64_t count = static_cast<std::int64_t>(mb) * T * model.config().channels;
    if (rk.stage > 0) rk.pp_comm->recv(model.stage_input(mb, T), count, rk.stage - 1, tag);
    const float loss = model.forward(batch);
    if (rk.stage < pp - 1) rk.pp_comm->send(model.stage_output(), count, rk.stage + 1, tag);
    if (model.stage().head) {
      loss_and_rows[0] += loss * static_cast<float>(model.scored_rows());
      loss_and_rows[1] += static_cast<float>(model.scored_rows());
    }
  }
  rk.world_comm->all_reduce_host(loss_and_rows, 2, ReduceOp::sum, tag);
}

float Trainer::evaluate() {
  std::vector<std::array<float, 2>> totals(ranks_.size(), {0.0f, 0.0f});
  on_every_rank([&](Rank& rank) { rank_evaluate(rank, totals[static_cast<std::size_t>(rank.rank)].data()); });
  return totals[0][1] > 0.0f ? totals[0][0] / totals[0][1] : 0.0f;
}

void Trainer::run(const std::function<void(const StepMetrics&)>& on_step, const std::atomic<bool>* stop) {
  while (steps_done_ < config_.steps) {
    if (stop != nullptr && stop->load()) return;
    const StepMetrics m = step();
    if (on_step) on_step(m);
  }
}

}  // namespace shardscope
