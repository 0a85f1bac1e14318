// SPDX-License-Identifier: GPL-3.0-or-later
// Training-step throughput of the CPU engine: median step time and tokens/s
// over many steps after a warm-up, for a preset and shape. Compare with
// bench/pytorch_gpt_bench.py run in the same session (docs/PERFORMANCE.md).
//   bench_train [--model gpt2-124m] [--batch 4] [--seq 64] [--steps 10] [--warmup 2] [--threads 2] [--json]
//               [--dp N] [--pp P] [--zero S] [--accum K] [--micro-batches M] [--schedule gpipe|1f1b]
//               [--naive] [--checkpoint] [--precision fp32|fp16|bf16] [--device cpu|cuda] [--gpu N]
//               [--profile-ops]   (also prints the time per backend op of rank 0)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "train/trainer.h"

using namespace shardscope;

int main(int argc, char** argv) {
  RunConfig config;
  config.model = "gpt-tiny";
  config.batch = 16;
  config.seq = 64;
  int steps = 20, warmup = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    const std::string a = argv[i];
    if (a == "--model") config.model = next();
    else if (a == "--batch") config.batch = std::stoi(next());
    else if (a == "--seq") config.seq = std::stoi(next());
    else if (a == "--steps") steps = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--threads") config.threads = std::stoi(next());
    else if (a == "--dp")
      config.layout[Axis::dp] = std::stoi(next());
    else if (a == "--pp")
      config.layout[Axis::pp] = std::stoi(next());
    else if (a == "--zero") config.zero_stage = std::stoi(next());
    else if (a == "--accum") config.accum = std::stoi(next());
    else if (a == "--micro-batches") config.micro_batches = std::stoi(next());
    else if (a == "--schedule") config.schedule = parse_pipeline_schedule_kind(next());
    else if (a == "--naive") config.dp_mode = DataParallelMode::naive;
    else if (a == "--checkpoint") config.checkpoint = true;
    else if (a == "--precision") config.precision = parse_precision(next());
    else if (a == "--device") config.device = next();
    else if (a == "--gpu") config.gpus = {std::stoi(next())};
    else if (a == "--json") json = true;
    else if (a == "--profile-ops") config.profile_ops = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  config.steps = steps + warmup;
  Trainer trainer(config);
  std::vector<double> times;
  trainer.run([&](const StepMetrics& m) {
    if (m.step == warmup) trainer.reset_op_profiles();
    if (m.step > warmup) times.push_back(m.step_time_s);
    if (!json)
      std::printf("step %lld: %.1f ms (forward %.1f, backward %.1f, optimizer %.1f), loss %.4f\n",
                  static_cast<long long>(m.step), m.step_time_s * 1e3, m.forward_s * 1e3, m.backward_s * 1e3,
                  m.optimizer_s * 1e3, m.loss);
  });
  double mean = 0.0;
  for (const double t : times) mean += t / static_cast<double>(times.size());
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  if (config.profile_ops)
    std::fprintf(json ? stderr : stdout, "rank 0, per step over the %d timed steps (each op between two device waits):\n%s",
                 steps, format_op_profile(trainer.op_profile(0), steps, mean).c_str());
  const double tokens_per_s = static_cast<double>(config.batch) * config.seq / median;
  if (json) {
    std::printf(
        "{\"impl\":\"shardscope\",\"model\":\"%s\",\"batch\":%d,\"seq\":%d,\"threads\":%d,\"median_step_s\":%.6f,"
        "\"tokens_per_s\":%.1f,\"blas\":\"%s\",\"dp\":%d,\"pp\":%d,\"zero\":%d,\"peak_bytes_rank0\":%lld,"
        "\"precision\":\"%s\",\"backend\":\"%s\",\"parameters\":%lld}\n",
        config.model.c_str(), config.batch, config.seq, config.threads, median, tokens_per_s, blas_name().c_str(),
        config.layout.dp(), config.layout.pp(), config.zero_stage,
        static_cast<long long>(trainer.ledger(0).peak_total()), std::string(precision_name(config.precision)).c_str(),
        trainer.backend_name().c_str(), static_cast<long long>(trainer.model(0).parameter_count()));
  } else {
    std::printf("%s B=%d T=%d: median step %.1f ms over %d steps, %.0f tokens/s (%s)\n", config.model.c_str(),
                config.batch, config.seq, median * 1e3, steps, tokens_per_s, trainer.backend_name().c_str());
  }
  return 0;
}
