// SPDX-License-Identifier: GPL-3.0-or-later
// In-process ring all-reduce bandwidth, as nccl-tests reports it:
//   algorithm bandwidth  algbw = S / t          (S = buffer bytes, t = one all_reduce)
//   bus bandwidth        busbw = algbw x 2(N-1)/N   (what each rank sends, per second)
// next to single-thread memcpy of the same size, measured in the same run.
// t is from the first rank starting to the last rank finishing; the medians of
// several repetitions are reported, after one untimed warm-up.
//   bench_allreduce [--sizes-mb 1,4,16,64,256] [--ranks 2,4,8] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "parallel/in_process_communicator.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per copy of `bytes` from one buffer to another, on one thread.
double memcpy_seconds(std::size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<double> times;
  for (int i = 0; i <= reps; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    const auto t1 = Clock::now();
    if (i > 0) times.push_back(std::chrono::duration<double>(t1 - t0).count());  // the first one warms up
  }
  if (dst[bytes / 2] != 1) std::abort();  // keeps the copy from being optimized away
  return median(times);
}

// Seconds per all_reduce of `count` floats over `ranks` threads.
double all_reduce_seconds(std::int64_t count, int ranks, int reps) {
  auto world = InProcessWorld::create(ranks);
  std::vector<int> members(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<std::size_t>(r)] = r;
  // [rep][rank]: when each rank started and finished its call.
  std::vector<std::vector<Clock::time_point>> start(static_cast<std::size_t>(reps + 1),
                                                    std::vector<Clock::time_point>(static_cast<std::size_t>(ranks))),
      end = start;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      auto comm = world->communicator(r, members);
      std::vector<float> data(static_cast<std::size_t>(count), 1.0f);
      for (int i = 0; i <= reps; ++i) {
        comm->barrier();  // untimed: every rank starts together
        start[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)] = Clock::now();
        comm->all_reduce(data.data(), count, ReduceOp::average, {});
        end[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)] = Clock::now();
      }
    });
  for (auto& t : threads) t.join();
  std::vector<double> times;
  for (int i = 1; i <= reps; ++i) {  // rep 0 warms up
    const auto& s = start[static_cast<std::size_t>(i)];
    const auto& e = end[static_cast<std::size_t>(i)];
    times.push_back(
        std::chrono::duration<double>(*std::max_element(e.begin(), e.end()) - *std::min_element(s.begin(), s.end()))
            .count());
  }
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes_mb = {1, 4, 16, 64, 256}, rank_counts = {2, 4, 8};
  int reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: bench_allreduce [--sizes-mb 1,4,16] [--ranks 2,4,8] [--reps 5]\n");
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--sizes-mb")
      sizes_mb = parse_list(v);
    else if (a == "--ranks")
      rank_counts = parse_list(v);
    else if (a == "--reps")
      reps = std::max(1, std::stoi(v));
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("cores: %u, repetitions: %d (median), GB = 1e9 bytes\n\n", std::thread::hardware_concurrency(), reps);
  std::printf("| size | memcpy GB/s | ranks | time ms | algbw GB/s | busbw GB/s |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  for (const int mb : sizes_mb) {
    const std::size_t bytes = static_cast<std::size_t>(mb) << 20;
    const double copy_gbs = static_cast<double>(bytes) / memcpy_seconds(bytes, reps) / 1e9;
    for (const int n : rank_counts) {
      const double t = all_reduce_seconds(static_cast<std::int64_t>(bytes / sizeof(float)), n, reps);
      const double algbw = static_cast<double>(bytes) / t / 1e9;
      std::printf("| %d MB | %.1f | %d | %.2f | %.2f | %.2f |\n", mb, copy_gbs, n, t * 1e3, algbw,
                  algbw * 2.0 * (n - 1) / n);
      std::fflush(stdout);
    }
  }
  return 0;
}
