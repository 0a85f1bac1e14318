// SPDX-License-Identifier: GPL-3.0-or-later
// All-reduce bandwidth between processes over MPI (engine/parallel/mpi), as
// nccl-tests reports it and as bench_allreduce does for in-process threads:
//   algorithm bandwidth  algbw = S / t          (S = buffer bytes, t = one all_reduce)
//   bus bandwidth        busbw = algbw x 2(N-1)/N   (what each rank sends, per second)
// t is the slowest rank's time for the call, every rank starting after a
// barrier; the median of several repetitions, after one untimed warm-up.
// Run under mpirun, once per algorithm (bench/run_mpi_bench.sh runs them all):
//   mpirun -np 4 bench_mpi_allreduce [--collectives ring|native] [--sizes-mb 1,4,16,64,256] [--reps 5]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "parallel/mpi/mpi_world.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  MpiCollectives collectives = MpiCollectives::ring;
  std::vector<int> sizes_mb = {1, 4, 16, 64, 256};
  int reps = 5;
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--collectives" && (v == "ring" || v == "native"))
      o.collectives = v == "ring" ? MpiCollectives::ring : MpiCollectives::native;
    else if (a == "--sizes-mb")
      o.sizes_mb = parse_list(v);
    else if (a == "--reps")
      o.reps = std::max(1, std::stoi(v));
    else
      return false;
  }
  return argc % 2 == 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per all_reduce of `count` floats: the slowest rank's time, median over reps.
double all_reduce_seconds(Communicator& comm, std::int64_t count, int reps) {
  std::vector<float> data(static_cast<std::size_t>(count), 1.0f);
  std::vector<double> times;
  for (int i = 0; i <= reps; ++i) {
    comm.barrier();  // untimed: every rank starts together
    const auto t0 = Clock::now();
    comm.all_reduce(data.data(), count, ReduceOp::average, {});
    double mine = std::chrono::duration<double>(Clock::now() - t0).count(), slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i > 0) times.push_back(slowest);  // the first one warms up
  }
  if (data[0] != 1.0f) std::abort();  // the average of ones: the call really ran
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: mpirun -np N bench_mpi_allreduce [--collectives ring|native] [--sizes-mb 1,4,16] "
                 "[--reps 5]\n");
    return 2;
  }
  MpiWorld world({o.collectives, 120.0});
  std::vector<int> members(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) members[static_cast<std::size_t>(r)] = r;
  const auto comm = world.communicator(members, nullptr, nullptr);
  const int n = world.size();
  const char* algorithm = o.collectives == MpiCollectives::ring ? "MPI ring" : "MPI native";
  for (const int mb : o.sizes_mb) {
    const std::size_t bytes = static_cast<std::size_t>(mb) << 20;
    const double t = all_reduce_seconds(*comm, static_cast<std::int64_t>(bytes / sizeof(float)), o.reps);
    const double algbw = static_cast<double>(bytes) / t / 1e9;
    if (world.rank() == 0) {
      std::printf("| %d MB | %s | %d | %.2f | %.2f | %.2f |\n", mb, algorithm, n, t * 1e3, algbw,
                  algbw * 2.0 * (n - 1) / n);
      std::fflush(stdout);
    }
  }
  return 0;
}
