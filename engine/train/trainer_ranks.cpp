// SPDX-License-Identifier: GPL-3.0-or-later
// How the trainer builds its ranks: each from its place in the sharding plan
// (plan/sharding_plan.h): its device, its communicators, its model (the
// stage's layers), where its parameters and gradients live, and its optimizer.
#include <string>

#include "core/caching_device_memory.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/device.h"
#include "ops/nccl.h"
#include "parallel/nccl_communicator.h"
#include "train/pipeline_flow.h"
#include "train/run_device_models.h"
#include "train/trainer_rank.h"

namespace shardscope {

RankDeviceFactory Trainer::cuda_devices() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) {
    if (process_.active())  // the other processes' ranks would wait for this one's NCCL communicators
      throw ConfigError("rank " + std::to_string(process_.rank) + ": --device cuda under mpirun: " + probe.reason +
                        " (every process needs a GPU; train on the CPU with --device cpu)");
    device_note_ = "--device cuda: " + probe.reason + "; training on the CPU instead";
    return {};
  }
  std::vector<int> gpus = config_.gpus;  // under mpirun: this process's only
  if (process_.active()) gpus = {process_gpu_ = process_gpu(static_cast<int>(probe.gpus.size()))};
  for (const int g : gpus)
    if (g >= static_cast<int>(probe.gpus.size()))
      throw ConfigError("--gpus: GPU " + std::to_string(g) + " does not exist (" + std::to_string(probe.gpus.size()) +
                        " found)");
  const bool several = plan_->grid().world_size() > 1;
  // Mixed precision multiplies 16-bit operands on the tensor cores, as torch.autocast does.
  const std::string matmul(precision_name(config_.precision));
  return [gpus, several, matmul](int r) {
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

// Under mpirun each process takes one GPU of its machine by its local rank, as
// torchrun's LOCAL_RANK does: --gpus's entry for it when the list has one per
// rank, else local rank modulo the machine's GPUs.
int Trainer::process_gpu(int gpu_count) const {
  const int local = process_.local_rank;
  if (config_.gpus.size() == 1) return local % gpu_count;
  if (local >= static_cast<int>(config_.gpus.size()))
    throw ConfigError("--gpus lists " + std::to_string(config_.gpus.size()) + " GPUs, but this machine runs process " +
                      std::to_string(local) + " (local rank) of the job");
  return config_.gpus[static_cast<std::size_t>(local)];
}

// One GPU listed: every rank shares it (in-process communicator, device copies).
// One per rank, or one rank per process (mpirun): NCCL between them. A call
// that has not finished after --comm-timeout aborts the run (PyTorch's watchdog).
void Trainer::open_nccl_world() {
  const NcclAvailability nccl = probe_nccl();
  if (!nccl.available && process_.active())
    throw ConfigError("rank " + std::to_string(process_.rank) +
                      ": --device cuda under mpirun: the processes talk through NCCL, which is unavailable (" +
                      nccl.reason + ")");
  if (!nccl.available)
    throw ConfigError("--gpus: one rank per GPU needs NCCL, which is unavailable (" + nccl.reason +
                      "); list one GPU (--gpus " + std::to_string(config_.gpus.front()) + ") and the ranks share it");
  if (!process_.active()) {
    nccl_ = std::make_unique<NcclWorld>(config_.gpus, nccl_abort_state(world_, config_.comm_timeout_s), sink_, &clock_);
    return;
  }
  std::vector<int> devices(static_cast<std::size_t>(plan_->grid().world_size()), -1);
  devices[static_cast<std::size_t>(process_.rank)] = process_gpu_;
  nccl_ = std::make_unique<NcclWorld>(devices, process_abort_state(), sink_, &clock_,
                                      [this](const std::vector<int>& members, NcclUniqueId& id) {
                                        process_.share(members, id.data(), static_cast<int>(id.size()));
                                      });
}

// Under mpirun the run is aborted by this process's rank or by another process
// (an abort notice, a dead peer); aborting tells the others.
NcclAbortState Trainer::process_abort_state() {
  NcclAbortState state;
  state.aborted = [this] { return world_->aborted() || process_.aborted(); };
  state.message = [this] { return process_.aborted() ? process_.abort_message() : world_->abort_message(); };
  state.abort = [this](int rank, const std::string& reason) { abort_world(rank, reason); };
  state.timeout_s = config_.comm_timeout_s;
  state.waiting = process_.waiting;
  state.unresponsive = process_.unresponsive;
  return state;
}

int Trainer::cpu_threads_per_rank() const {
  const int cores = config_.threads > 0 ? config_.threads : available_cores();
  return std::max(1, cores / plan_->grid().world_size());
}

std::unique_ptr<Trainer::Rank> Trainer::build_rank(int r, const RankDeviceFactory& devices) {
  const RankPlan& place = plan_->rank(r);
  auto rank = std::make_unique<Rank>();
  rank->rank = r;
  rank->dp_rank = place.dp_rank;
  rank->stage = place.stage;
  rank->tp_rank = place.tp_rank;
  rank->strategy = make_strategy(*plan_, config_);
  attach_device(*rank, devices);
  connect_communicators(*rank);
  build_model(*rank);
  build_optimizer(*rank);
  return rank;
}

void Trainer::attach_device(Rank& rank, const RankDeviceFactory& devices) {
  if (devices) {
    RankDevice device = devices(rank.rank);
    rank.device_memory = std::move(device.memory);
    rank.ledger.set_device_memory(rank.device_memory.get());
    rank.backend = std::move(device.backend);
    rank.comm_backend = std::move(device.comm_backend);
    rank.cuda_stream = device.cuda_stream;
    // Ranks sharing the device exchange buffers through it (the in-process
    // communicator's device copies); host values through its *_host calls.
    rank.comm_device = CommDevice{rank.backend.get(), rank.comm_backend ? rank.comm_backend.get() : rank.backend.get(),
                                  rank.device_memory.get(), &rank.ledger};
  } else {
    rank.comm_device.ledger = &rank.ledger;  // the collectives' staging counts on the rank's ledger
    if (config_.test_device_capacity > 0) {
      rank.device_memory =
          std::make_unique<CachingDeviceMemory>(std::make_unique<HostRawAllocator>(config_.test_device_capacity));
      rank.ledger.set_device_memory(rank.device_memory.get());
    }
    const int cores = config_.threads > 0 ? config_.threads : available_cores();
    const int threads = cpu_threads_per_rank();
    rank.backend = make_cpu_backend(CpuBackendOptions{threads});
    // A CPU rank runs on its own virtual device (clock/device_clock.h), timed by its own work.
    // The ranks share one compute slot per core (clock/device_clock.h: less noise in their CPU times).
    auto slots = ranks_.empty() ? std::make_shared<ComputeSlots>(std::max(1, cores / threads))
                                : ranks_.front()->clock->slots();
    rank.clock = std::make_unique<DeviceClock>(config_.clock, clock_, run_link_model(config_), threads,
                                               std::move(slots), run_gpu_time_model(config_));
    // --gpu-profile: each op's span lasts its modeled time on that GPU (train/run_device_models.h).
    if (rank.clock->gpu()) rank.backend = make_gpu_timed_backend(std::move(rank.backend), *rank.clock);
    if (rank.rank == config_.slow_rank) rank.clock->set_compute_factor(config_.slow_factor);  // --slow-rank
  }
  if (rank.clock == nullptr) rank.clock = std::make_unique<DeviceClock>(ClockKind::wall, clock_);  // a GPU's own time
  if (config_.profile_ops) {  // the collectives' device copies (comm_device) stay untimed
    rank.op_profile = std::make_unique<OpProfile>();
    rank.backend = make_profiling_backend(std::move(rank.backend), *rank.op_profile);
  }
}

// The rank's groups on the grid: its stage's data-parallel peers, its
// pipeline, the tied embedding's first and last stage, its context- and
// tensor-parallel peers, and the whole world. Every group but the world's is the rank's own
// (Grid::group): with tp > 1 the same dp rank and stage has tp ranks.
void Trainer::connect_communicators(Rank& rank) {
  Rank* self = &rank;
  if (nccl_ != nullptr) {
    const NcclRank on{rank.backend.get(), rank.comm_backend.get(), rank.device_memory.get(), rank.cuda_stream};
    rank.make_communicator = [this, self, on](const std::vector<int>& members) {
      try {
        return nccl_->communicator(self->rank, members, on);
      } catch (const CommAborted& e) {  // another rank failed while this one waited for the group
        throw RankFailure(std::string("the ranks stopped: ") + e.what());
      } catch (const std::runtime_error& e) {  // NCCL could not make the group: the other ranks stop too
        abort_world(self->rank, e.what());
        throw RankFailure("rank " + std::to_string(self->rank) + ": " + e.what());
      }
    };
  } else if (process_.active()) {  // mpirun: the peers are other processes
    rank.make_communicator = [this, self](const std::vector<int>& members) {
      return process_.communicator(members, self->clock.get(), sink_);
    };
  } else {
    rank.make_communicator = [this, self](const std::vector<int>& members) {
      return world_->communicator(self->rank, members, self->comm_device, self->clock.get());
    };
  }
  const Grid& grid = plan_->grid();
  rank.dp_comm = rank.group(grid.group(rank.rank, Axis::dp));
  std::vector<int> all(static_cast<std::size_t>(grid.world_size()));
  for (int r = 0; r < grid.world_size(); ++r) all[static_cast<std::size_t>(r)] = r;
  rank.world_comm = rank.group(all);
  if (grid.pp() > 1) {
    rank.pp_comm = rank.group(grid.group(rank.rank, Axis::pp));
    // The tied embedding's two copies (none under ZB-V, whose stage 0 holds both ends).
    const bool tied_pair = !plan_->stages().front().layers.head;
    if (tied_pair && (rank.stage == 0 || rank.stage == grid.pp() - 1))
      rank.embedding_comm = rank.group(
          {grid.with_coordinate(rank.rank, Axis::pp, 0), grid.with_coordinate(rank.rank, Axis::pp, grid.pp() - 1)});
  }
  if (grid.size(Axis::cp) > 1) {
    rank.cp_comm = rank.group(grid.group(rank.rank, Axis::cp));
    rank.cp_group = make_context_parallel_group(*rank.cp_comm, config_.cp_split == "zigzag");
  }
  if (grid.tp() > 1) {
    rank.tp_comm = rank.group(grid.group(rank.rank, Axis::tp));
    rank.tp_group = make_tensor_parallel_group(*rank.tp_comm);
  }
  if (const int ep = config_.expert_parallel; ep > 1) {                     // ep consecutive dp ranks split the experts
    rank.ep_comm = rank.group(expert_parallel_group(grid, rank.rank, ep));  // (parallel/expert_parallel.h)
    rank.ep_group = make_expert_parallel_group(*rank.ep_comm);
    rank.expert_dp_comm = rank.group(expert_data_parallel_group(grid, rank.rank, ep));
  }
}

// The stage's layers, with its parameters and gradients in the model's own
// fp32 buffers or in the unit storage (ZeRO-2/3 chunks, 16-bit copies).
void Trainer::build_model(Rank& rank) {
  const ModelConfig model_config = initial_ ? initial_->config : run_model_config(config_);
  const RankPlan& place = plan_->rank(rank.rank);
  rank.dtype = config_.precision == Precision::fp16   ? DType::f16
               : config_.precision == Precision::bf16 ? DType::bf16
                                                      : DType::f32;
  StageLayers layers = plan_->stage(rank.stage).layers;  // and its tensor-parallel slice of them
  layers.tp_rank = rank.tp_rank;
  layers.tp_size = plan_->grid().tp();
  layers.sequence_parallel = config_.sequence_parallel;
  layers.expert_rank = rank.dp_rank % config_.expert_parallel;  // and its experts (expert parallelism)
  layers.expert_ranks = config_.expert_parallel;
  rank.model = make_model(model_config, layers, *rank.backend, rank.ledger,
                          ModelBuffers{plan_->model_holds_parameters(), plan_->model_holds_gradients()});
  rank.model->set_tensor_parallel_group(rank.tp_group.get());
  rank.model->set_context_parallel_group(rank.cp_group.get());
  if (rank.ep_group) rank.model->mixture_of_experts()->set_expert_parallel_group(rank.ep_group.get());
  rank.model->set_checkpointing(config_.checkpoint);
  rank.model->set_event_sink(sink_, rank.clock.get());
  rank.model->set_layer_boundary_callback([this, self = &rank] { check_stop(*self); });  // Ctrl-C mid-step
  set_up_pipeline_stage(rank, run_->pipeline_schedule());  // its actions, and slots for what it holds in flight
  if (plan_->unit_storage()) {
    rank.unit_storage =
        std::make_unique<ZeroShardedStorage>(*plan_, place, rank.dtype, *rank.model, *rank.dp_comm, rank.ledger);
    rank.model->set_unit_storage(rank.unit_storage.get());
  }
  // Every replica and stage starts as the one whole model would (--init-from: from its weights).
  if (initial_) rank.model->set_initial_parameters(initial_parameters_);
  if (plan_->model_holds_parameters())
    rank.model->init_weights(config_.seed);
  else
    rank.unit_storage->init_parameters(config_.seed);
  rank.scaler = std::make_unique<DynamicLossScaler>(loss_scaler_options(config_));
}

// What the rank updates (everything, its ZeRO shard, or nothing on a naive
// replica) and how it combines gradients with its peers: its strategy's.
void Trainer::build_optimizer(Rank& rank) {
  AdamWOptions options{0.9f, config_.adam_beta2, 1e-8f, config_.weight_decay};
  options.master_weights = rank.dtype != DType::f32;
  rank.strategy->build(rank, options);
  if (rank.optimizer != nullptr && options.master_weights)  // mixed precision: fp32 master copies of the 16 bits
    rank.optimizer->load_master(static_cast<const std::uint16_t*>(rank.unit_storage->parameters()), rank.dtype,
                                /*params_packed=*/rank.unit_storage->shards_parameters());
}

}  // namespace shardscope
