// SPDX-License-Identifier: GPL-3.0-or-later
// The training loop over N ranks (threads of this process, on the CPU). Each
// rank owns its ledger, backend, model replica and optimizer (or optimizer
// shard) and runs the same step; ranks talk only through their communicators.
// With one rank this is plain single-process training.
//
// One optimizer step on every rank (data-parallel rank d, pipeline stage s):
//   for each of `accum` accumulation steps: the stage's pipeline schedule over
//   m micro-batches (with one stage: forward then backward); the last backward
//   overlaps DDP's bucketed all-reduce;
//   then the gradients are combined (the tied embedding's two copies summed
//   across the first and last stage; naive gather to rank 0, ZeRO-1's
//   reduce-scatter), the optimizer updates (everything, its ZeRO shard, or
//   rank 0 only), and ZeRO shards are all-gathered. How the data-parallel
//   ranks share this is the rank's strategy (train/strategy/strategy.h).
// A rank that throws aborts the communicators, so every rank stops; Ctrl-C
// (run()'s stop flag) takes the same path from the next layer boundary. A rank
// out of memory (OutOfMemory) is reported with what the estimator predicted for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "config/run_config.h"
#include "core/memory_ledger.h"
#include "data/text_dataset.h"
#include "events/event.h"
#include "io/hf_model.h"
#include "model/model.h"
#include "ops/backend.h"
#include "ops/op_profile.h"
#include "parallel/communicator.h"
#include "plan/run_plan.h"
#include "train/fault_injection.h"
#include "train/lr_schedule.h"

namespace shardscope {

class DeviceClock;
class InProcessWorld;
struct CheckpointManifest;
struct RankCheckpoint;
struct TrainingCheckpoint;
class NcclWorld;
struct NcclAbortState;
class ShardingPlan;
struct MicroBatches;

struct StepMetrics {
  std::int64_t step = 0;      // optimizer steps done, from 1
  float loss = 0.0f;          // mean training loss over the global batch, before the update
  float lr = 0.0f;            // learning rate used by this step
  double grad_norm = 0.0;     // global L2 norm before clipping
  double tokens_per_s = 0.0;  // tokens of the global batch / wall time of the step
  double step_time_s = 0.0;
  // On the virtual clock: how long the step took there (the latest rank's
  // compute stream, from the step's start to its end; the evaluation is not in
  // it), and the global batch's tokens over it: the throughput on the modeled
  // device (this machine's cores, or --gpu-profile's GPU). 0 on the wall clock.
  double virtual_step_s = 0.0;
  double modeled_tokens_per_s = 0.0;
  double forward_s = 0.0;                // rank 0's share of step_time_s: forward (with the loss),
  double backward_s = 0.0;               // backward (with the overlapped all-reduce),
  double optimizer_s = 0.0;              // gradient combination, norm, clipping, AdamW, gathers
  float loss_scale = 1.0f;               // the fp16 loss scale this step used (1 without a scaler)
  bool skipped = false;                  // fp16: inf/NaN in the gradients, the update was not applied
  std::optional<float> eval_loss;        // mean validation loss, on evaluation steps
  MemoryBytes memory;                    // rank 0's ledger by category after the step
  MemoryBytes memory_peak;               // rank 0's peak bytes by category so far
  std::vector<MemoryBytes> rank_memory;  // every rank's current bytes, by global rank (this process's under mpirun)
  // Mixture of experts (model/mixture_of_experts.h), summed over this process's
  // ranks' micro-batches: the load-balancing loss (its mean), the choices made,
  // those dropped over capacity, and the choices each expert took per MoE layer.
  // Null for a dense model.
  std::shared_ptr<const MoeStats> moe;
};

// Where one rank's buffers live and what runs its ops, when not the CPU. The
// trainer makes these itself for --device cuda; tests pass a factory (a
// pretend GPU on the CPU, a memory that runs out).
struct RankDevice {
  std::unique_ptr<DeviceMemory> memory;  // every Buffer of the rank
  std::unique_ptr<Backend> backend;      // the rank's compute
  // Copies and sums of collectives between ranks sharing the device, on a
  // stream of their own (null with one rank).
  std::unique_ptr<Backend> comm_backend;
  void* cuda_stream = nullptr;  // the compute backend's cudaStream_t, which NCCL calls wait for
};
using RankDeviceFactory = std::function<RankDevice(int rank)>;

// Ranks as processes (mpirun, app/cli_train.cpp): this process builds and runs
// only global rank `rank` of the layout; its groups come from `communicator`
// (an MPI world, parallel/mpi/mpi_world.h, which only the CLI links), and a
// failing rank calls `abort`, which tells the other processes. Data, init and
// RNG are those of the threaded run, so the losses match. Empty: every rank
// in this process, as threads.
struct RankProcess {
  int rank = 0;
  std::function<std::unique_ptr<Communicator>(const std::vector<int>& members, DeviceClock* clock, EventSink* sink)>
      communicator;
  std::function<void(int rank, const std::string& reason)> abort;
  // The run's start on the steady clock (RunClock::steady_ns), shared by the
  // job's processes so their event times compare; unset: when the trainer is built.
  std::optional<std::int64_t> clock_origin_ns;
  std::function<bool()> aborted;  // another process failed, or died
  std::function<std::string()> abort_message;
  // --device cuda: this process's place among its machine's processes (its
  // GPU), and how a group's members get its first member's NCCL unique id.
  int local_rank = 0;
  std::function<void(const std::vector<int>& members, void* data, int bytes)> share;
  // An NCCL call's wait, as the MPI world counts waits (+1, -1), and which
  // processes are not waiting after a timeout ("; rank 2 does not answer").
  std::function<void(int delta)> waiting;
  std::function<std::string()> unresponsive;
  // Checkpoints (trainer_checkpoint.cpp), every process at the same point:
  // rank 0's text on every process, and every process's text on rank 0 (by rank; empty elsewhere).
  std::function<std::string(const std::string& text)> broadcast;
  std::function<std::vector<std::string>(const std::string& text)> gather;
  bool active() const { return static_cast<bool>(communicator); }
};

// A checkpoint save (Trainer::begin_checkpoint .. finish_checkpoint): its step
// directory and what it cost.
struct CheckpointSave {
  std::int64_t step = 0;
  std::string dir;
  double copy_s = 0.0;        // training waited: every rank's state copied to host memory
  double write_s = 0.0;       // in the background: the files written, fsync'd and committed
  std::int64_t start_ns = 0;  // when the copy began, on the run's event clock
};

// A rank failed: what() names the rank and the cause.
class RankFailure : public std::runtime_error {
 public:
  explicit RankFailure(const std::string& what, bool out_of_memory = false)
      : std::runtime_error(what), out_of_memory_(out_of_memory) {}
  // The rank ran out of memory: the run's size, not a bug in the program.
  bool out_of_memory() const { return out_of_memory_; }

 private:
  bool out_of_memory_;
};

// The stop flag was raised mid-step (Ctrl-C): a rank saw it at a layer
// boundary and aborted the world, as a failing rank does, so every rank
// stopped. The step is discarded; the trainer runs no further steps.
class RunInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A step that was not skipped (no loss scaler skipped it) ended with a loss or
// gradient norm that is not finite: every later step would train on NaN.
class TrainingDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Trainer {
 public:
  // One rank's state (train/trainer_rank.h): opaque outside the trainer's
  // sources and its strategies (train/strategy/strategy.h).
  struct Rank;

  // Validates the config (ConfigError names the flag) and loads the data.
  // Events (compute spans, communication, metrics) go to `sink` if not null.
  // Throws OutOfMemory naming the rank and the estimator's prediction when a
  // rank's model, gradients or optimizer states do not fit.
  // `devices` (tests) overrides how ranks get their device: every rank then
  // trains on the device it makes; with config.device "cuda" and one GPU per
  // rank in config.gpus they talk through NCCL (the plugin ops/nccl.h loads),
  // else through the in-process communicator.
  // `process` (mpirun): only that rank is built here, the others run in other processes.
  explicit Trainer(const RunConfig& config, EventSink* sink = nullptr, RankDeviceFactory devices = {},
                   RankProcess process = {});
  // The run as the CLI and the GUI made it (plan/run_plan.h): validated and
  // planned already, so the trainer checks and builds neither again.
  explicit Trainer(RunPlanPtr run, EventSink* sink = nullptr, RankDeviceFactory devices = {}, RankProcess process = {});
  ~Trainer();

  // Runs config.steps steps, calling on_step after each. Returns early when
  // *stop becomes true: between steps, or mid-step at the next layer (every
  // rank checks before each layer's forward and backward), the unfinished step
  // discarded; after that the trainer runs no further steps.
  void run(const std::function<void(const StepMetrics&)>& on_step, const std::atomic<bool>* stop = nullptr);
  // One optimizer step on every rank; returns its metrics. Throws RankFailure,
  // or RunInterrupted when run()'s stop flag is raised during it.
  StepMetrics step();
  // Saves the training state after steps_done() steps as ROOT/step-N/ (train/checkpoint.h):
  // every rank writes its own file, in its own thread (or, under mpirun, in
  // its own process; rank 0 commits once every file is durable). Returns the
  // step directory; throws OutputError when it cannot be written (ROOT's
  // earlier checkpoints are left as they were). Every process calls it.
  // save_checkpoint waits for the write; begin_checkpoint copies the state to
  // host memory (the only wait) and writes it in a background thread while
  // training goes on, as torch.distributed.checkpoint's async_save; the next
  // begin_checkpoint or finish_checkpoint waits for it (finish: its result,
  // nullopt when none is in flight, and a log event spanning the save; it
  // rethrows the write's error). The trainer's destructor waits too.
  std::string save_checkpoint(const std::string& root);
  void begin_checkpoint(const std::string& root);
  std::optional<CheckpointSave> finish_checkpoint();
  // The step directory config.resume_dir resolved to (empty: a fresh run).
  const std::string& resumed_from() const { return resumed_from_; }
  // Set when a resumed mixture-of-experts run routes micro-batches of another size than the run that
  // saved it (the experts' capacity follows a micro-batch's tokens): what continues differs from an
  // uninterrupted run, said once (also as a warning event). Empty otherwise.
  const std::string& resume_note() const { return resume_note_; }
  // Mean loss over config.eval_batches fixed validation batches (on rank 0).
  float evaluate();
  // The step's routing figures of a MoE model, summed over this process's ranks; null when dense.
  std::shared_ptr<const MoeStats> moe_step_stats() const;

  const RunConfig& config() const { return config_; }
  const ShardingPlan& plan() const { return *plan_; }
  int world_size() const { return config_.world_size(); }
  // The global ranks this process runs: all of them, or its one rank under MPI.
  std::vector<int> local_ranks() const;
  const Model& model(int rank = 0) const;
  Model& model(int rank = 0);
  const MemoryLedger& ledger(int rank = 0) const;
  // Every byte of a rank's parameters (in their storage type: fp32, or the 16
  // bits of mixed precision, sharded under ZeRO-3) followed by its optimizer's
  // fp32 master weights (mixed precision) and AdamW m and v: what a skipped
  // step must leave exactly as it was.
  std::vector<unsigned char> model_state_bytes(int rank) const;
  const TextDataset& dataset() const { return *dataset_; }
  std::int64_t steps_done() const { return steps_done_; }
  std::string backend_name() const;
  // Where the ranks run, for the run's summary: "cpu (...) per rank",
  // "cuda:0 (NAME), shared by all 4 ranks", or every rank's GPU then
  // "one rank per GPU (NCCL)".
  std::string placement() const;
  // "859392 parameters" (the whole model's), and on a pipeline what each stage
  // holds: "...; stage 0 embeddings + layers 0-1 = 462592 parameters; ..."
  // (plan/sharding_plan.h): a stage's count is not the model's.
  std::string parameters_text() const;
  // The whole model's parameters, whichever stage a rank holds.
  std::int64_t model_parameters() const;
  // "BLAS: OpenBLAS 0.3.21, kernel SkylakeX (AVX-512; ...)" where ranks compute on the CPU, else "".
  std::string blas_kernel_line() const;
  // RunConfig::profile_ops: a rank's time per backend op since the start or the
  // last reset (ops/op_profile.h); empty when not profiling.
  std::map<std::string, OpStats> op_profile(int rank = 0) const;
  void reset_op_profiles();
  // Set when a --device cuda run found no usable GPU and trains on the CPU
  // instead: the reason, said once (also as a warning event). Empty otherwise.
  const std::string& device_note() const { return device_note_; }
  // The clock of the run's events, for its header: "virtual (one device per
  // rank; link host: 9.8 GB/s (measured memory copy), 1.0 us per transfer)" or "wall (...)".
  std::string clock_text() const;
  // The device the virtual clock models: the --gpu-profile's name ("H100") or
  // "this machine's cores"; empty on the wall clock.
  std::string modeled_device() const;
  // --init-from: where the weights came from, and what the load did beyond copying them.
  const std::string& init_note() const { return init_note_; }

 private:
  // Building the ranks (trainer_ranks.cpp), each from its place in the plan.
  RankDeviceFactory cuda_devices();  // empty, with device_note_ set, when no GPU is usable
  int process_gpu(int gpu_count) const;
  // A CPU rank's threads: the cores (--threads, else this machine's) shared by the ranks, at least 1.
  int cpu_threads_per_rank() const;
  void open_nccl_world();
  NcclAbortState process_abort_state();
  std::unique_ptr<Rank> build_rank(int rank, const RankDeviceFactory& devices);
  void attach_device(Rank& rank, const RankDeviceFactory& devices);
  void connect_communicators(Rank& rank);
  void build_model(Rank& rank);
  void build_optimizer(Rank& rank);
  void load_initial_model();
  void announce();  // the run's first log lines
  // Checkpoints (trainer_checkpoint.cpp).
  RankCheckpoint rank_checkpoint(const Rank& rank) const;
  CheckpointManifest checkpoint_manifest() const;
  // Saving (checkpoint_save.cpp): the state in host memory, then the files.
  struct CheckpointSnapshot;
  CheckpointSnapshot checkpoint_snapshot() const;
  std::string write_checkpoint(const std::string& root, CheckpointSnapshot& snapshot) const;
  std::string write_checkpoint_as_process(const std::string& root, CheckpointSnapshot& snapshot) const;
  // Under mpirun, a rank of this process failed: the save in flight (if any)
  // may take up to save_grace_s() to end before the other processes hear of
  // it. Returns what happened to it, for the abort's message (empty: none in flight).
  struct SaveInFlight;
  std::string await_save_before_abort();
  double save_grace_s() const;
  const std::string& data_fingerprint() const;  // the tokens' FNV-1a, for the manifest and the resume check
  // Before the rank files are read: the manifest's model, shapes, seed and data are this run's.
  void check_checkpoint(const std::string& dir, const CheckpointManifest& manifest) const;
  void restore_rank(Rank& rank, const TrainingCheckpoint& checkpoint);
  void restore_checkpoint(const std::string& path);  // config.resume_dir: at construction

  // One rank's step (rank_step.cpp, pipeline_flow.cpp, optimizer_step.cpp),
  // phase by phase, calling the rank's strategy (train/strategy/strategy.h).
  void rank_step(Rank& rank);
  BatchData read_global_batch(const Rank& rank) const;
  void begin_step(Rank& rank, const CommTag& tag);
  void forward_backward(Rank& rank, const MicroBatches& inputs, int accumulation_step, bool synchronize,
                        const CommTag& tag);
  bool overflow_verdict(Rank& rank, const CommTag& tag);
  Event event_base(const Rank& rank, std::int64_t step) const;
  Event optimizer_span(const Rank& rank, const CommTag& tag) const;
  void emit_memory_sample(const Rank& rank, const Event& span);
  void rank_evaluate(Rank& rank, float* loss_and_rows);
  // Runs fn on every rank, each in its own thread; a rank that throws aborts
  // the world, and the first rank's own error is rethrown as RankFailure
  // (RunInterrupted if the ranks stopped for the stop flag).
  void on_every_rank(const std::function<void(Rank&)>& fn);
  // stopped_within_ns: from the first rank's failure until every rank had stopped (-1: unknown).
  void raise_rank_errors(const std::vector<std::exception_ptr>& errors, std::int64_t stopped_within_ns = -1);
  // Called by every rank before each layer: throws RunInterrupted once run()'s stop flag is up.
  void check_stop(const Rank& rank) const;
  void emit(const Event& event);
  // A rank failed: the in-process world and, in process mode, the other processes stop.
  void abort_world(int rank, const std::string& reason);
  Rank& rank_at(int rank) const;  // a rank this process runs, by global rank
  // The time of an event that is no rank's (logs, step metrics): the latest
  // rank's virtual clock (virtual), or the run's steady clock (wall).
  std::int64_t event_time_ns() const;
  // "; the estimator predicted 3.10 GiB for rank 0 (activations 1.20 GiB)", or
  // empty where the estimator could not model the run: added to out-of-memory errors.
  std::string predicted_text(int rank, MemoryCategory category) const;

  RunPlanPtr run_;                      // the run's config, validated, and its sharding plan (plan/run_plan.h)
  const RunConfig& config_;             // run_->config()
  const ShardingPlan* plan_;            // &run_->sharding(): who holds what on every rank
  FaultInjection faults_;               // test hooks (--inject-failure, --inject-overflow); off by default
  EventSink* sink_;
  RunClock clock_;
  std::unique_ptr<TextDataset> dataset_;
  mutable std::string data_fingerprint_;  // of dataset_'s tokens, made by the first save or resume
  std::shared_ptr<InProcessWorld> world_;
  std::unique_ptr<NcclWorld> nccl_;  // one GPU per rank: NCCL groups (null otherwise)
  std::vector<std::unique_ptr<Rank>> ranks_;  // the ranks this process runs (all of them, unless process_)
  RankProcess process_;
  int process_gpu_ = 0;  // under mpirun with --device cuda: this process's GPU
  LrSchedule schedule_;
  std::int64_t steps_done_ = 0;
  std::string device_note_;
  std::string resumed_from_;
  std::string resume_note_;
  std::vector<MemoryBytes> predicted_;  // the estimator's bytes per rank for config_; empty if none
  bool failed_ = false;
  // --init-from: the loaded model while the ranks are built (each copies its part), then released.
  std::unique_ptr<HfModel> initial_;
  std::shared_ptr<const std::vector<float>> initial_parameters_;
  std::string init_note_;
  const std::atomic<bool>* stop_ = nullptr;  // run()'s stop flag, while it runs
  // The save in flight as a failing rank thread sees it (await_save_before_abort),
  // replaced by begin_checkpoint under its mutex; and one process abort at a time.
  std::shared_ptr<SaveInFlight> save_in_flight_;
  std::mutex save_in_flight_mutex_;
  std::mutex process_abort_mutex_;
  // The save writing in the background (begin_checkpoint). Last: destroyed
  // first, its destructor waits for the write, which reads the members above.
  std::future<CheckpointSave> pending_save_;
};

}  // namespace shardscope
