// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli schedule: the action lists the engine executes for a pipeline
// (--pp stages, --micro-batches m, GPipe or 1F1B), their modeled timeline and
// bubble fraction beside GPipe's formula (p - 1) / (m + p - 1).
#include "cli_schedule.h"

#include <cstdio>

#include "cli_args.h"
#include "plan/pipeline_schedule.h"

namespace shardscope::cli {

namespace {
// The listing and its simulation grow with p·m (six actions per micro-batch and
// stage, and the simulator's maps): 256 × 4096 took minutes and a gigabyte and
// printed 75 MB no one reads. p·m up to 65536 runs in about a second.
constexpr std::int64_t kMaxScheduleSize = 65536;

void check_schedule_size(int stages, int micro_batches) {
  const std::int64_t size = static_cast<std::int64_t>(stages) * micro_batches;
  if (size > kMaxScheduleSize)
    throw UsageError("--pp " + std::to_string(stages) + " × --micro-batches " + std::to_string(micro_batches) + " = " +
                     std::to_string(size) + ": at most " + std::to_string(kMaxScheduleSize) +
                     " (the listing would have about " + std::to_string(6 * size) +
                     " actions); the bubble of any size is (p-1)/(m+p-1)");
}
}  // namespace

int run_schedule(const std::vector<std::string>& args) {
  int stages = 4, micro_batches = 8;
  std::string kind = "1f1b";
  bool communication = false;
  float forward = 1.0f, backward = 2.0f;
  ArgParser parser("shardscope-cli schedule",
                   "Print the per-stage action lists of a pipeline schedule (F3 / B3: forward / backward of\n"
                   "micro-batch 3) and the bubble of its modeled timeline.");
  parser.add_int("--pp", "Pipeline stages (p), 1-256; p × m at most 65536", &stages, 1, 256);
  parser.add_int("--micro-batches", "Micro-batches per step (m), 1-4096; p × m at most 65536", &micro_batches, 1, 4096);
  parser.add_string("--schedule", "gpipe|1f1b", "Schedule", &kind);
  parser.add_switch("--communication", "Also list the sends and receives between stages", &communication);
  parser.add_float("--forward-time", "Modeled time of one forward on one stage, in (0, 1000000]", &forward);
  parser.add_float("--backward-time", "Modeled time of one backward on one stage, in (0, 1000000]", &backward);
  if (!parser.parse(args)) return 0;
  for (float t : {forward, backward})  // times add up over p·m actions: keep their sum finite
    if (!(t > 0.0f && t <= 1e6f)) throw UsageError("--forward-time and --backward-time must be in (0, 1000000]");
  check_schedule_size(stages, micro_batches);

  const PipelineScheduleKind k = parse_pipeline_schedule_kind(kind);
  const PipelineSchedule schedule = make_pipeline_schedule(k, stages, micro_batches);
  std::fputs(format_pipeline_schedule(schedule, communication).c_str(), stdout);
  const PipelineTimeline t = simulate_pipeline_schedule(schedule, forward, backward);
  std::printf("\n%s, p=%d, m=%d: modeled step %.1f time units, bubble %.1f%% (GPipe formula (p-1)/(m+p-1) = %.1f%%)\n",
              pipeline_schedule_name(k), stages, micro_batches, t.makespan, 100.0 * t.bubble_fraction,
              100.0 * gpipe_bubble_fraction(stages, micro_batches));
  std::printf("micro-batches held at once per stage:");
  for (int held : t.peak_micro_batches_in_flight) std::printf(" %d", held);
  std::printf("\n");
  return 0;
}

}  // namespace shardscope::cli
