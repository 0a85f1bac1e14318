// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <new>
#include <thread>

#include "core/byte_text.h"
#include "core/error.h"
#include "data/default_corpus.h"
#include "data/tokenizer.h"
#include "estimate/host_memory_fit.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "model/mixture_of_experts.h"
#include "ops/backend.h"
#include "ops/cpu/blas_kernel.h"
#include "parallel/in_process_communicator.h"
#include "parallel/nccl_communicator.h"
#include "parallel/pipeline_parallel.h"
#include "parallel/zero_storage.h"
#include "plan/interleaved_schedule.h"  // previous_stage_of, next_stage_of
#include "plan/sharding_plan.h"
#include "plan/zb_v_schedule.h"  // v_place_before, v_place_after
#include "train/adamw.h"
#include "train/expert_load_events.h"
#include "train/trainer_rank.h"

namespace shardscope {

using trainer_detail::Clock;
using trainer_detail::seconds_since;

namespace {

// The stages before and after chunk c of `stage` in the model (nullopt at its
// ends): round-robin chunks (interleaved_schedule.h) or ZB-V's V, whose last
// stage is its own neighbour where the V turns.
std::pair<std::optional<int>, std::optional<int>> chunk_peers(ChunkPlacement placement, int stage, int c, int pp,
                                                              int chunks) {
  if (placement == ChunkPlacement::round_robin)
    return {previous_stage_of(stage, c, pp), next_stage_of(stage, c, pp, chunks)};
  const auto before = v_place_before(stage, c, pp), after = v_place_after(stage, c, pp);
  return {before ? std::optional<int>(before->stage) : std::nullopt,
          after ? std::optional<int>(after->stage) : std::nullopt};
}
// --init-from DIR with a tokenizer: the text is read with the model's tokenizer, else as bytes.
std::unique_ptr<Tokenizer> model_tokenizer(const RunConfig& config, const ModelConfig& model) {
  if (config.init_from.empty() || !has_hf_tokenizer(config.init_from)) return nullptr;
  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(config.init_from);
  if (tokenizer->vocab_size() > model.vocab)
    throw ConfigError("--init-from " + config.init_from + ": the tokenizer (" + tokenizer->source() + ") has " +
                      std::to_string(tokenizer->vocab_size()) + " ids, more than the model's vocab_size " +
                      std::to_string(model.vocab));
  return tokenizer;
}

std::unique_ptr<TextDataset> load_dataset(const RunConfig& config, const ModelConfig& model) {
  const std::unique_ptr<Tokenizer> tokenizer = model_tokenizer(config, model);
  if (config.data.empty())
    return std::make_unique<TextDataset>(
        TextDataset::from_text(default_corpus(), config.seq, "<default corpus>", tokenizer.get()));
  return std::make_unique<TextDataset>(config.data, config.seq, tokenizer.get());
}

// Ranks on the CPU share this machine's memory: a run whose prediction for all
// of them together exceeds it is refused before any of it is allocated.
void check_fits_host(const std::vector<MemoryBytes>& predicted, int cpu_threads) {
  std::int64_t total = 0;
  for (const MemoryBytes& rank : predicted)
    if (__builtin_add_overflow(total, rank.total(), &total)) total = INT64_MAX;
  check_fits_host_memory(total, static_cast<int>(predicted.size()), host_memory_limit(cpu_threads));
}

}  // namespace

Trainer::Trainer(const RunConfig& config, EventSink* sink, RankDeviceFactory devices, RankProcess process)
    : Trainer(make_run_plan(config), sink, std::move(devices), std::move(process)) {}

Trainer::Trainer(RunPlanPtr run, EventSink* sink, RankDeviceFactory devices, RankProcess process)
    : run_(std::move(run)),
      config_(run_->config()),
      plan_(&run_->sharding()),
      faults_(config_),
      sink_(sink),
      process_(std::move(process)) {
  if (process_.clock_origin_ns) clock_ = RunClock(*process_.clock_origin_ns);
  world_ = InProcessWorld::create(plan_->grid().world_size(), sink_, &clock_);
  const bool probed = !devices && config_.device == "cuda";
  if (probed) devices = cuda_devices();  // empty (the CPU) when no GPU is usable: device_note_ says why
  if (devices && config_.device == "cuda" && (config_.gpus.size() > 1 || process_.active())) open_nccl_world();
  // The estimator's bytes (for out-of-memory messages) for the kernels the ranks
  // really got: a --device cuda run that fell back to the CPU keeps T x T attention.
  RunConfig predicted_for = config_;
  if (!devices) predicted_for.device = "cpu";
  predicted_ = predict_run_memory(predicted_for, *plan_);
  // A GPU's own memory is checked as its ranks allocate; processes may be on other machines.
  if (!devices && !process_.active())  // every rank's threads run BLAS
    check_fits_host(predicted_, plan_->grid().world_size() * cpu_threads_per_rank());
  dataset_ = load_dataset(config_, run_model_config(config_));
  load_initial_model();
  for (int r = 0; r < plan_->grid().world_size(); ++r) {
    if (process_.active() && r != process_.rank) continue;  // the other ranks are other processes
    try {
      ranks_.push_back(build_rank(r, devices));
    } catch (const OutOfMemory& e) {  // ranks are built one after another: none runs yet, none to stop
      throw OutOfMemory("rank " + std::to_string(r) + ": " + e.what() + predicted_text(r, e.category()), e.category(),
                        e.bytes());
    }
  }
  initial_.reset();  // every rank holds its copy now
  initial_parameters_.reset();
  schedule_ = LrSchedule{config_.lr, config_.lr * config_.min_lr_ratio, config_.warmup_steps(), config_.steps};
  if (!config_.resume_dir.empty()) restore_checkpoint(config_.resume_dir);  // train/checkpoint.h
  announce();
}

// --init-from DIR: read once here, copied into every rank's stage and shard by build_model.
void Trainer::load_initial_model() {
  if (config_.init_from.empty()) return;
  initial_ = std::make_unique<HfModel>(read_hf_model_dir(config_.init_from));
  initial_parameters_ = std::make_shared<const std::vector<float>>(std::move(initial_->parameters));
  init_note_ = "weights from " + config_.init_from + " (" + std::to_string(initial_parameters_->size()) + " parameters)";
  for (const std::string& note : initial_->notes) init_note_ += "; " + note;
}

void Trainer::announce() {
  for (const std::string* text : {&device_note_, &resume_note_}) {
    if (text->empty()) continue;
    Event note;
    note.kind = EventKind::log;
    note.level = LogLevel::warning;
    note.start_ns = note.end_ns = event_time_ns();
    note.set_text(*text);
    emit(note);
  }
  const Grid& grid = plan_->grid();
  Event log;
  log.kind = EventKind::log;
  log.level = LogLevel::info;
  log.start_ns = log.end_ns = event_time_ns();
  log.set_text(config_.model + ": " + std::to_string(grid.world_size()) + " ranks (dp " + std::to_string(grid.dp()) +
               " x pp " + std::to_string(grid.pp()) +
               (grid.size(Axis::cp) > 1 ? " x cp " + std::to_string(grid.size(Axis::cp)) : "") +
               (grid.tp() > 1 ? " x tp " + std::to_string(grid.tp()) : "") +
               (config_.expert_parallel > 1 ? ", experts over ep " + std::to_string(config_.expert_parallel) : "") +
               "), " + std::string(data_parallel_mode_name(config_.dp_mode)) + ", ZeRO-" +
               std::to_string(config_.zero_stage) + ", " + std::string(precision_name(config_.precision)) +
               ", micro-batch " + std::to_string(config_.micro_batch_size()) + ", " + placement());
  emit(log);
  log.set_text(config_.model + ": " + parameters_text());
  emit(log);
  if (!init_note_.empty()) {
    log.set_text(init_note_);
    emit(log);
  }
  if (const std::string blas = blas_kernel_line(); !blas.empty()) {
    log.set_text(blas);
    emit(log);
  }
}

std::int64_t Trainer::model_parameters() const {
  return ParameterLayout(ranks_.front()->model->config()).total();
}

std::string Trainer::parameters_text() const {
  std::string text = std::to_string(model_parameters()) + " parameters";
  if (plan_->grid().pp() > 1) text += "; " + stage_parameters_text(*plan_);
  return text;
}

// The CPU backend's matrix kernel, checked against the CPU (ops/cpu/blas_kernel.h); empty on a GPU.
std::string Trainer::blas_kernel_line() const {
  return ranks_[0]->backend->host_memory() ? ensure_blas_kernel().line() : std::string();
}

Trainer::~Trainer() = default;

const Model& Trainer::model(int rank) const {
  return *rank_at(rank).model;
}
Model& Trainer::model(int rank) {
  return *rank_at(rank).model;
}
const MemoryLedger& Trainer::ledger(int rank) const {
  return rank_at(rank).ledger;
}
std::vector<unsigned char> Trainer::model_state_bytes(int rank) const {
  const Rank& rk = rank_at(rank);
  std::vector<unsigned char> out;
  const auto append = [&](const void* data, std::int64_t bytes) {  // in the backend's memory
    if (data == nullptr || bytes <= 0) return;
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(bytes));
    rk.backend->download(out.data() + at, data, bytes);
  };
  const Model& model = *rk.model;
  if (rk.unit_storage != nullptr && rk.unit_storage->parameters() != nullptr) {
    const std::int64_t count =
        rk.unit_storage->shards_parameters() ? rk.unit_storage->shard_size() : model.parameter_count();
    append(rk.unit_storage->parameters(), count * static_cast<std::int64_t>(dtype_size(rk.dtype)));
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
  const Rank& rk = rank_at(rank);
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

std::vector<int> Trainer::local_ranks() const {
  std::vector<int> out;
  for (const auto& r : ranks_) out.push_back(r->rank);
  return out;
}

Trainer::Rank& Trainer::rank_at(int rank) const {
  for (const auto& r : ranks_)
    if (r->rank == rank) return *r;
  throw std::out_of_range("rank " + std::to_string(rank) + " runs in another process");
}

// Under mpirun the first failing thread tells the other processes, once a
// save in flight has ended (checkpoint_save.cpp: await_save_before_abort,
// bounded by save_grace_s); a second failing thread, or the NCCL watchdog
// calling in, waits on the mutex for that long at most and adds nothing.
void Trainer::abort_world(int rank, const std::string& reason) {
  world_->abort(rank, reason);
  if (!process_.abort) return;
  std::lock_guard lock(process_abort_mutex_);
  if (process_.aborted && process_.aborted()) return;  // told already, or another process failed first
  const std::string save_note = await_save_before_abort();
  process_.abort(rank, reason + save_note);
}

void Trainer::emit(const Event& event) {
  if (sink_ != nullptr) sink_->emit(event);
}

std::int64_t Trainer::event_time_ns() const {
  std::int64_t latest = 0;
  for (const auto& rank : ranks_) {
    if (!rank->clock->is_virtual()) return clock_.now_ns();
    latest = std::max(latest, rank->clock->compute_time());
  }
  return ranks_.empty() && config_.clock == ClockKind::wall ? clock_.now_ns() : latest;
}

std::string Trainer::clock_text() const {
  const DeviceClock& clock = *ranks_.front()->clock;
  if (!clock.is_virtual())
    return "wall (this machine's steady clock: how long the rank threads took, sharing its cores)";
  const std::string compute = clock.gpu() ? "its ops' modeled time on " + clock.gpu()->describe()
                                           : "its threads' CPU time / their number";
  return "virtual (one device per rank: compute = " + compute + "; link " + clock.link().describe() + ")";
}

std::string Trainer::modeled_device() const {
  const DeviceClock& clock = *ranks_.front()->clock;
  if (!clock.is_virtual()) return {};
  return clock.gpu() ? clock.gpu()->gpu : "this machine's cores";
}

std::string Trainer::predicted_text(int rank, MemoryCategory category) const {
  if (rank < 0 || rank >= static_cast<int>(predicted_.size())) return {};
  const MemoryBytes& predicted = predicted_[static_cast<std::size_t>(rank)];
  return "; the estimator predicted " + binary_bytes(predicted.total()) + " for rank " + std::to_string(rank) + " (" +
         std::string(memory_category_name(category)) + " " + binary_bytes(predicted[category]) + ")";
}

void Trainer::on_every_rank(const std::function<void(Rank&)>& fn) {
  if (failed_) throw RankFailure("the run has stopped after a rank failed or it was interrupted");
  const std::size_t local = ranks_.size();
  std::vector<std::exception_ptr> errors(local);
  std::atomic<std::int64_t> first_error_ns{0};  // steady clock: when the first rank failed
  const auto note_error = [&first_error_ns] {
    std::int64_t none = 0;
    first_error_ns.compare_exchange_strong(none, RunClock::steady_ns());
  };
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < local; ++r) {
    threads.emplace_back([this, r, &errors, &fn, &note_error] {
      Rank& rank = *ranks_[r];
      // This thread's CPU time is the rank's work (virtual clock), until it ends or throws.
      struct Attached {
        DeviceClock& clock;
        explicit Attached(DeviceClock& c) : clock(c) { clock.attach_compute_thread(); }
        ~Attached() { clock.detach_compute_thread(); }
      } attached(*rank.clock);
      try {
        fn(rank);
      } catch (const std::exception& e) {
        note_error();
        errors[r] = std::current_exception();
        abort_world(rank.rank, e.what());
      } catch (...) {
        note_error();
        errors[r] = std::current_exception();
        abort_world(rank.rank, "unknown error");
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::int64_t first = first_error_ns.load();
  raise_rank_errors(errors, first != 0 ? RunClock::steady_ns() - first : -1);
}

// The cause is the first rank whose error is its own, not the abort it
// received nor the stop flag; else the stop flag; else the abort itself.
void Trainer::raise_rank_errors(const std::vector<std::exception_ptr>& errors, std::int64_t stopped_within_ns) {
  char within[64] = "";
  if (stopped_within_ns >= 0)
    std::snprintf(within, sizeof within, " within %.1f ms", static_cast<double>(stopped_within_ns) / 1e6);
  bool interrupted = false, any = false;
  std::string aborted;  // the abort a rank received (process mode: from another process)
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    const int r = ranks_[i]->rank;
    any = failed_ = true;  // the world is aborted: no further step can run
    try {
      std::rethrow_exception(errors[i]);
    } catch (const CommAborted& e) {
      aborted = e.what();
      continue;
    } catch (const RunInterrupted&) {
      interrupted = true;
    } catch (const std::exception& e) {
      std::string cause = e.what();
      const auto* oom = dynamic_cast<const OutOfMemory*>(&e);
      if (oom != nullptr) cause += predicted_text(r, oom->category());
      Event error;
      error.kind = EventKind::error;
      error.rank = r;
      error.stage = ranks_[i]->stage;
      error.step = steps_done_ + 1;  // the step it failed in
      error.level = LogLevel::error;
      error.start_ns = error.end_ns = event_time_ns();
      const std::string stopped = "all " + std::to_string(world_size()) + " ranks stopped" + within;
      error.set_text("rank " + std::to_string(r) + ": " + cause + "; " + stopped);
      emit(error);
      throw RankFailure("rank " + std::to_string(r) + " failed: " + cause + "; " + stopped,
                        oom != nullptr || dynamic_cast<const std::bad_alloc*>(&e) != nullptr);
    }
  }
  if (interrupted) throw RunInterrupted("interrupted during step " + std::to_string(steps_done_ + 1));
  if (any) throw RankFailure("the ranks stopped: " + (process_.active() ? aborted : world_->abort_message()));
}

void Trainer::check_stop(const Rank& rank) const {
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed))
    throw RunInterrupted("rank " + std::to_string(rank.rank) + " stopped: interrupted");
}

StepMetrics Trainer::step() {
  const auto start = Clock::now();
  const std::int64_t step_start_ns = event_time_ns();
  on_every_rank([this](Rank& rank) { rank_step(rank); });
  const std::int64_t step_end_ns = event_time_ns();
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
  if (ranks_.front()->clock->is_virtual() && step_end_ns > step_start_ns) {
    m.virtual_step_s = static_cast<double>(step_end_ns - step_start_ns) * 1e-9;
    m.modeled_tokens_per_s = static_cast<double>(config_.batch) * config_.seq / m.virtual_step_s;
  }
  m.moe = moe_step_stats();  // the step's routing, before the evaluation's forwards add theirs
  if (config_.eval_every > 0 && (steps_done_ % config_.eval_every == 0 || steps_done_ == config_.steps)) {
    try {
      m.eval_loss = evaluate();
    } catch (const RunInterrupted&) {
      // Ctrl-C during the evaluation: the step itself is done, its metrics stand without it.
    }
  }
  m.memory = r0.ledger.current();
  m.memory_peak = r0.ledger.peak();
  for (const auto& rank : ranks_) m.rank_memory.push_back(rank->ledger.current());

  Event metrics;
  metrics.kind = EventKind::step_metrics;
  metrics.step = m.step;
  metrics.start_ns = metrics.end_ns = step_end_ns;  // the step's end, before its evaluation
  metrics.loss = m.loss;
  metrics.lr = m.lr;
  metrics.grad_norm = static_cast<float>(m.grad_norm);
  metrics.loss_scale = m.loss_scale;
  metrics.skipped = m.skipped;
  metrics.tokens_per_s = static_cast<float>(m.tokens_per_s);
  metrics.has_eval_loss = m.eval_loss.has_value();
  metrics.eval_loss = m.eval_loss.value_or(0.0f);
  metrics.memory = m.memory.bytes;
  // Global figures, once per job: under mpirun the other processes' copies would repeat them.
  if (!process_.active() || process_.rank == 0) {
    if (m.moe) {  // the routing first, so a view has it when the step's metrics arrive
      metrics.aux_loss = static_cast<float>(m.moe->aux_loss());
      for (const Event& load : expert_load_events(r0.model->config(), *m.moe, m.step, step_end_ns)) emit(load);
    }
    emit(metrics);
  }
  return m;
}

std::shared_ptr<const MoeStats> Trainer::moe_step_stats() const {
  if (ranks_.front()->model->moe_stats() == nullptr) return nullptr;
  auto sum = std::make_shared<MoeStats>();
  for (const auto& rank : ranks_) sum->add(*rank->model->moe_stats());
  return sum;
}

void Trainer::rank_evaluate(Rank& rk, float* loss_and_rows) {
  // The validation samples in micro-batches of the training shape, dealt out to
  // the data-parallel ranks and run through the stages forward only.
  const int T = config_.seq, mb = config_.micro_batch_size(), pp = config_.layout.pp();
  const std::int64_t chunks = static_cast<std::int64_t>(config_.eval_batches) * config_.batch / mb;
  Model& model = *rk.model;
  model.close_all_slots();
  CommTag tag{steps_done_, -1, -1};
  // No micro-batch: the tensor-parallel all-reduces of the evaluation's
  // forwards are not the step's last micro-batch's (clock/schedule_summary.h counts those).
  model.set_event_context(event_base(rk, steps_done_));
  if (rk.unit_storage != nullptr)  // ZeRO-3's gathers here are not the step's traffic (plan/data_parallel_traffic.h)
    rk.unit_storage->set_context(sink_, rk.clock.get(), event_base(rk, steps_done_), CommPurpose::evaluation);
  // Each data-parallel rank its share (naive DataParallel: the master alone).
  const EvaluationShare share = rk.strategy->evaluation_share(rk, chunks);
  for (std::int64_t k = share.first; k < chunks; k += share.stride) {
    // Step index 0 for every evaluation: the same validation batches each time.
    const BatchData data = dataset_->batch(model.config().kind, Split::validation, config_.seed, 0, k * mb, mb, T);
    const Batch batch{mb, T, data.input_ids.data(), data.targets.data(), nullptr, nullptr};
    const std::int64_t count = stage_boundary_floats(model, mb, T, /*activation=*/true);
    const float* previous_output = nullptr;
    float loss = 0.0f;
    bool head = false;
    for (int c = 0; c < model.chunks(); ++c) {  // interleaved stages: chunk c on every stage, then chunk c + 1
      model.select_chunk(c);
      const auto [from, to] = chunk_peers(chunk_placement(config_.schedule), rk.stage, c, pp, model.chunks());
      if (from == rk.stage)  // ZB-V's last stage: chunk c - 1's output, still in the buffers, is chunk c's input
        std::copy(previous_output, previous_output + count, model.stage_input(mb, T));
      else if (from)
        rk.pp_comm->recv(model.stage_input(mb, T), count, *from, tag);
      loss = model.forward(batch);
      head = head || model.stage().head;
      previous_output = model.stage_output();
      if (to && *to != rk.stage) rk.pp_comm->send(model.stage_output(), count, *to, tag);
    }
    model.select_chunk(0);
    if (head && rk.tp_rank == 0) {  // tp ranks share the loss: counted once
      loss_and_rows[0] += loss * static_cast<float>(model.scored_rows());
      loss_and_rows[1] += static_cast<float>(model.scored_rows());
    }
  }
  rk.world_comm->all_reduce_host(loss_and_rows, 2, ReduceOp::sum, tag);
}

float Trainer::evaluate() {
  std::vector<std::array<float, 2>> totals(static_cast<std::size_t>(world_size()), {0.0f, 0.0f});
  on_every_rank([&](Rank& rank) { rank_evaluate(rank, totals[static_cast<std::size_t>(rank.rank)].data()); });
  const auto& first = totals[static_cast<std::size_t>(ranks_.front()->rank)];  // every rank has the world's totals
  return first[1] > 0.0f ? first[0] / first[1] : 0.0f;
}

// Before the step is reported (a checkpoint of NaN weights is worse than none).
static void check_finite(const StepMetrics& m) {
  if (m.skipped || (std::isfinite(m.loss) && std::isfinite(m.grad_norm))) return;
  char text[160];
  std::snprintf(text, sizeof text, "step %lld: the loss is %g and the gradient norm %g: training diverged",
                static_cast<long long>(m.step), static_cast<double>(m.loss), static_cast<double>(m.grad_norm));
  throw TrainingDiverged(std::string(text) +
                         " (no loss scaler skipped the step); lower --lr, clip gradients (--grad-clip) or check "
                         "--init-from's weights");
}

void Trainer::run(const std::function<void(const StepMetrics&)>& on_step, const std::atomic<bool>* stop) {
  stop_ = stop;  // every rank checks it before each layer (check_stop)
  try {
    while (steps_done_ < config_.steps && !(stop != nullptr && stop->load())) {
      const StepMetrics m = step();
      check_finite(m);
      if (on_step) on_step(m);
    }
  } catch (const RunInterrupted&) {
    // Mid-step: the ranks stopped at their next layer; the unfinished step is discarded.
  } catch (...) {
    stop_ = nullptr;
    throw;
  }
  stop_ = nullptr;
}

}  // namespace shardscope
