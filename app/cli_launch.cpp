// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli launch, and train's process mode under mpirun (cli_launch.h).
#include "cli_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli_args.h"
#include "cli_restart.h"
#include "cli_train.h"
#include "config/run_schema.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/input_file.h"
#include "parallel/communicator.h"

namespace shardscope::cli {

void check_process_layout(const RunConfig& config, int processes, bool by_launch) {
  if (processes != config.world_size())
    throw ConfigError(std::string(by_launch ? "launch would start " : "mpirun started ") + std::to_string(processes) +
                      " processes but the layout has dp " + std::to_string(config.layout.dp()) + " x pp " +
                      std::to_string(config.layout.pp()) +
                      (config.layout.tp() > 1 ? " x tp " + std::to_string(config.layout.tp()) : "") + " = " +
                      std::to_string(config.world_size()) + " ranks: " +
                      (by_launch ? "give --nproc-per-node " + std::to_string(config.world_size()) +
                                       " (per machine of the hostfile: processes = nproc-per-node x machines)"
                                 : "run mpirun -np " + std::to_string(config.world_size())) +
                      ", or change --dp / --pp" + (config.layout.tp() > 1 ? " / --tp" : ""));
  if (config.gpu_profile != "none")
    throw ConfigError("--gpu-profile under mpirun: ranks as processes run on the wall clock, and the GPU profile "
                      "times the virtual clock's spans; run the ranks as threads (without mpirun)");
  if (config.slow_rank >= 0)
    throw ConfigError(
        "--slow-rank under mpirun: ranks as processes run on the wall clock, and --slow-rank slows a "
        "rank on the virtual clock; run the ranks as threads (without mpirun)");
}

ProcessMode join_mpi_job(RunConfig& config, std::string& record) {
  ProcessMode mode;
  if (!MpiWorld::launched_by_mpirun()) return mode;
  MpiOptions options;
  options.collectives = config.collectives == "native" ? MpiCollectives::native : MpiCollectives::ring;
  options.timeout_s = config.comm_timeout_s;
  options.heartbeat_timeout_s = config.heartbeat_timeout_s;
  mode.world = std::make_unique<MpiWorld>(options);
  MpiWorld& world = *mode.world;
  check_process_layout(config, world.size(), false);
  config.clock = ClockKind::wall;  // each process has its own clock: the wall clock is the truth they share
  if (world.rank() != 0) {         // one copy of the outputs: rank 0's
    config.metrics_out.clear();
    record.clear();
  }
  mode.process.rank = world.rank();
  // One machine's processes share the steady clock: rank 0's start is theirs, so
  // their events line up; on another machine, its own clock from this moment.
  const std::string origin = world.broadcast_from_rank0(std::to_string(RunClock::steady_ns()));
  mode.process.clock_origin_ns = world.on_this_machine(0) ? std::stoll(origin) : RunClock::steady_ns();
  mode.process.communicator = [&world](const std::vector<int>& members, DeviceClock* clock, EventSink* sink) {
    return world.communicator(members, clock, sink);
  };
  mode.process.abort = [&world](int rank, const std::string& reason) { world.abort(rank, reason); };
  mode.process.aborted = [&world] { return world.aborted(); };
  mode.process.abort_message = [&world] { return world.abort_message(); };
  mode.process.local_rank = world.local_rank();
  mode.process.share = [&world](const std::vector<int>& members, void* data, int bytes) {
    world.share(members, data, bytes);
  };
  mode.process.waiting = [&world](int delta) { world.add_waiting(delta); };
  mode.process.unresponsive = [&world] { return world.ask_peers(); };
  mode.process.broadcast = [&world](const std::string& text) { return world.broadcast_from_rank0(text); };
  mode.process.gather = [&world](const std::string& text) { return world.gather_to_rank0(text); };
  if (world.rank() == 0) {
    const std::string collectives =
        config.device == "cuda" ? "NCCL between the processes' GPUs (one GPU per local rank, ids sent over MPI)"
        : config.collectives == "native" ? "native collectives (MPI's own: the ring view shows one span per call)"
                                         : "ring collectives (ring over MPI messages: every chunk is an event)";
    std::printf("ranks as processes: %d MPI processes, one rank each; %s; comm timeout %g s, heartbeat timeout %g s\n",
                world.size(), collectives.c_str(), config.comm_timeout_s, config.heartbeat_timeout_s);
    std::fflush(stdout);
  }
  return mode;
}

namespace {

std::string naming_rank(int rank, const std::string& what) {
  const std::string name = "rank " + std::to_string(rank);
  if (what.starts_with(name + ": ") || what.starts_with(name + " ")) return what;
  return name + ": " + what;
}

}  // namespace

void rethrow_naming_rank(int rank) {
  try {
    throw;
  } catch (const CommAborted& e) {
    throw RankFailure(naming_rank(rank, std::string("the ranks stopped: ") + e.what()));
  } catch (const RankFailure& e) {
    throw RankFailure(naming_rank(rank, e.what()), e.out_of_memory());
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(naming_rank(rank, e.what()), e.category(), e.bytes());
  } catch (const ConfigError& e) {
    throw ConfigError(naming_rank(rank, e.what()));
  } catch (const FormatError& e) {
    throw FormatError(naming_rank(rank, e.what()));
  } catch (const UsageError& e) {
    throw UsageError(naming_rank(rank, e.what()));
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // an internal error, reported as one
    throw std::runtime_error(naming_rank(rank, e.what()));
  }
}

namespace {

// A hostfile is a list of machines: 4 MiB is a million of them. The bound
// (and read_input_file's refusal of anything but a regular file) keeps a
// FIFO or /dev/zero from blocking launch or filling the memory.
constexpr std::uint64_t kMaxHostfileBytes = 4u << 20;

// The hosts of an mpirun hostfile: its lines that are not blank or comments.
std::int64_t count_hosts(const std::string& path) {
  const std::string text = read_input_file(path, "--hostfile", kMaxHostfileBytes);
  std::int64_t hosts = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') ++hosts;
  }
  if (hosts == 0) throw ConfigError("--hostfile: '" + path + "' lists no host");
  return hosts;
}

// nproc x hosts, checked: the count mpirun is given (-np) and the layout is
// checked against. Past the most ranks a run can have (--dp's limit x --pp's)
// it is refused by name, never wrapped into a negative -np.
int launch_processes(int nproc, std::int64_t hosts, const std::string& hostfile) {
  const std::int64_t dp = run_field("dp").max, pp = run_field("pp").max;
  const std::optional<std::int64_t> processes = product_if_fits(nproc, hosts);
  if (!processes || *processes > dp * pp)
    throw ConfigError("--nproc-per-node " + std::to_string(nproc) + " x " + std::to_string(hosts) +
                      " machines in --hostfile '" + hostfile +
                      "' = " + (processes ? std::to_string(*processes) : std::string("more than 2^63")) +
                      " processes: at most " + std::to_string(dp * pp) + " (a run's most ranks, --dp " +
                      std::to_string(dp) + " x --pp " + std::to_string(pp) + ")");
  return static_cast<int>(*processes);
}

std::string this_program() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "shardscope-cli";
  return std::string(path, static_cast<std::size_t>(n));
}

struct LaunchFlags {
  int nproc = 0;
  std::string hostfile;
  bool dry_run = false;
  int max_restarts = 0;  // cli_restart.h
  int processes = 0;     // nproc x the hostfile's machines (launch_processes)
};

// mpirun's command line: root needs --allow-run-as-root; more processes than
// cores need --oversubscribe (Open MPI refuses them otherwise).
std::vector<std::string> mpirun_command(const LaunchFlags& flags, const std::vector<std::string>& command) {
  std::vector<std::string> argv{"mpirun"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (flags.nproc > static_cast<int>(std::thread::hardware_concurrency())) argv.push_back("--oversubscribe");
  if (!flags.hostfile.empty()) {
    argv.insert(argv.end(), {"--hostfile", flags.hostfile, "--map-by", "ppr:" + std::to_string(flags.nproc) + ":node"});
  }
  argv.insert(argv.end(), {"-np", std::to_string(flags.processes), this_program()});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace

int run_launch(const std::vector<std::string>& args) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  LaunchFlags flags;
  ArgParser parser("shardscope-cli launch",
                   "Start a command (train ...) as N processes per machine, one rank each, through Open MPI's\n"
                   "mpirun: shardscope-cli launch --nproc-per-node 4 -- train --dp 4");
  parser.add_int("--nproc-per-node", "Processes (ranks) per machine", &flags.nproc, 1, 4096);
  parser.add_string("--hostfile", "FILE", "mpirun's hostfile: the machines, one per line", &flags.hostfile);
  parser.add_switch("--dry-run", "Print the mpirun command line and do not run it", &flags.dry_run);
  parser.add_int("--max-restarts",
                 "When the job fails (a rank dies, freezes or throws), start it again from the latest\n"
                 "      checkpoint committed in train's --save-dir, at most N times (default 0)",
                 &flags.max_restarts, 0, 1000);
  if (!parser.parse({args.begin(), dashes})) return 0;
  if (flags.nproc == 0) throw UsageError("--nproc-per-node is required");
  if (dashes == args.end() || dashes + 1 == args.end())
    throw UsageError("the command to launch goes after '--', e.g. launch --nproc-per-node 4 -- train --dp 4");
  // Each process would start an mpirun of its own, which Open MPI refuses (or crashes on).
  if (dashes[1] == "launch")
    throw UsageError(
        "launch -- launch: mpirun cannot start mpirun; give the command itself after '--', e.g. "
        "launch --nproc-per-node 4 -- train --dp 4");
  const std::int64_t hosts = flags.hostfile.empty() ? 1 : count_hosts(flags.hostfile);
  flags.processes = launch_processes(flags.nproc, hosts, flags.hostfile);
  // One clear error before any process starts, not one from every process.
  if (dashes[1] == "train" && !check_train_for_processes({dashes + 2, args.end()}, flags.processes)) return 0;
  const auto job_argv = [&flags](const std::vector<std::string>& command) {
    const std::vector<std::string> argv = mpirun_command(flags, command);
    std::string line;
    for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
    std::fprintf(stderr, "launch: %s\n", line.c_str());
    std::fflush(stderr);
    return argv;
  };
  if (flags.max_restarts > 0 && !flags.dry_run)
    return run_with_restarts(job_argv, {dashes + 1, args.end()}, flags.max_restarts);
  const std::vector<std::string> argv = job_argv({dashes + 1, args.end()});
  if (flags.dry_run) return 0;
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  execvp("mpirun", c_argv.data());
  throw ConfigError("cannot run mpirun (" + std::string(std::strerror(errno)) +
                    "): install Open MPI (scripts/install-deps.sh installs openmpi-bin)");
}

}  // namespace shardscope::cli
