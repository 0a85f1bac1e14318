// SPDX-License-Identifier: GPL-3.0-or-later
// Ranks as processes: `shardscope-cli launch` (a wrapper round mpirun, as
// torchrun is round its own launcher) and what `train` does when mpirun
// started it (one rank per process, parallel/mpi/mpi_world.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "parallel/mpi/mpi_world.h"
#include "train/trainer.h"

namespace shardscope::cli {

// This process's place in an MPI job; world is null when mpirun did not start it.
struct ProcessMode {
  std::unique_ptr<MpiWorld> world;
  RankProcess process;
  bool prints() const { return world == nullptr || world->rank() == 0; }  // rank 0 prints and writes the outputs
};

// Joins the MPI job if mpirun started this process: checks that the job has
// dp x pp processes (ConfigError otherwise), switches the run to the wall
// clock with rank 0's start as every local process's origin, and leaves the
// metrics and the recording to rank 0 (record is cleared elsewhere; the other
// processes' events reach it through cli_job_events.h). Prints what process
// mode means on rank 0.
ProcessMode join_mpi_job(RunConfig& config, std::string& record);

// What a run as `processes` processes refuses (ConfigError): another count of
// processes than dp x pp, checkpoints, a GPU profile. `by_launch`: the words
// of `launch`, which checks before it starts mpirun.
void check_process_layout(const RunConfig& config, int processes, bool by_launch);

// Rethrows the exception in flight (call it in a catch block) with its
// message naming this process's rank once: under mpirun every process prints
// its own error on the shared terminal. A message that begins with the rank
// ("rank 2: ...", "rank 2 failed: ...") keeps it; the others get it in front.
// The type stays, so the exit code does (cli_main.cpp), except that an abort
// received from another process becomes a RankFailure, as in the trainer.
[[noreturn]] void rethrow_naming_rank(int rank);

// shardscope-cli launch --nproc-per-node N [--hostfile FILE] [--dry-run] -- train ...
int run_launch(const std::vector<std::string>& args);

}  // namespace shardscope::cli
