// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli schedule: the action lists the engine executes for a pipeline
// (--pp stages, --micro-batches m, GPipe, 1F1B, ZB-H1, ZB-H2 or interleaved
// 1F1B), their modeled timeline and bubble fraction beside GPipe's formula
// (p - 1) / (m + p - 1), for the zero-bubble schedules ZB-H1's
// (p-1)(T_F+T_B-T_W) over the step, and for interleaving (p-1)/(v·m + p-1).
#include "cli_schedule.h"

#include <cstdio>
#include <utility>

#include "cli_args.h"
#include "plan/pipeline_schedule.h"
#include "plan/schedule_file.h"

namespace shardscope::cli {

namespace {
// The listing and its simulation grow with p·m (six actions per micro-batch and
// stage, and the simulator's maps): 256 × 4096 took minutes and a gigabyte and
// printed 75 MB no one reads. p·m up to 65536 runs in about a second.
constexpr std::int64_t kMaxScheduleSize = 65536;

void check_schedule_size(int stages, int micro_batches, int virtual_stages) {
  const std::int64_t size = static_cast<std::int64_t>(stages) * micro_batches * virtual_stages;
  if (size > kMaxScheduleSize)
    throw UsageError("--pp " + std::to_string(stages) + " × --micro-batches " + std::to_string(micro_batches) +
                     (virtual_stages > 1 ? " × --virtual-stages " + std::to_string(virtual_stages) : "") + " = " +
                     std::to_string(size) + ": at most " + std::to_string(kMaxScheduleSize) +
                     " (the listing would have about " + std::to_string(6 * size) +
                     " actions); the bubble of any size is (p-1)/(m+p-1)");
}
void print_in_flight(const PipelineTimeline& t) {
  std::printf("micro-batches held at once per stage:");
  for (int held : t.peak_micro_batches_in_flight) std::printf(" %d", held);
  std::printf("\n");
}

// --schedule-file: a hand-written schedule (plan/schedule_file.h), checked
// before anything else, then printed and timed as the built-in ones.
int print_schedule_file(const ScheduleFile& file, const std::string& path, bool communication, float forward,
                        float backward, float weight) {
  check_schedule_size(file.stages, file.micro_batches, file.virtual_stages);
  std::fputs(format_pipeline_schedule(file.schedule, communication).c_str(), stdout);
  bool split = false;
  for (const auto& list : file.schedule)
    for (const auto& a : list) split = split || a.type == PipelineAction::Type::weight_gradient;
  const PipelineTimeline t =
      split ? simulate_pipeline_schedule(file.schedule, forward, backward - weight, 0, weight, file.placement)
            : simulate_pipeline_schedule(file.schedule, forward, backward, 0, 0, file.placement);
  std::printf(
      "\n%s: p=%d, m=%d, v=%d: modeled step %.1f time units, bubble %.1f%% (GPipe formula (p-1)/(m+p-1) = "
      "%.1f%%",
      path.c_str(), file.stages, file.micro_batches, file.virtual_stages, t.makespan, 100.0 * t.bubble_fraction,
      100.0 * gpipe_bubble_fraction(file.stages, file.micro_batches));
  if (file.placement == ChunkPlacement::v_shape)
    std::printf(", 2 chunks per rank in a V");
  else if (file.virtual_stages > 1)
    std::printf(", interleaved (p-1)/(v·m+p-1) = %.1f%%",
                100.0 * interleaved_bubble_fraction(file.stages, file.micro_batches, file.virtual_stages));
  std::printf(")\n");
  print_in_flight(t);
  return 0;
}
}  // namespace

namespace {
// What a schedule file fixes: a run-config key, its flag, the file's value and what the file does.
struct ShapeSetting {
  const char* key;
  const char* flag;
  int in_file;
  std::string what;
};
std::vector<ShapeSetting> shape_settings(const ScheduleFile& file) {
  std::vector<ShapeSetting> settings{
      {"pp", "--pp", file.stages, "has " + std::to_string(file.stages) + " rows (ranks)"},
      {"micro_batches", "--micro-batches", file.micro_batches,
       "runs " + std::to_string(file.micro_batches) + " micro-batches"}};
  if (file.placement == ChunkPlacement::round_robin)  // a V's two chunks are --schedule zb-v's, not --virtual-stages
    settings.push_back({"virtual_stages", "--virtual-stages", file.virtual_stages,
                        "puts " + std::to_string(file.virtual_stages) + " model chunks on each rank"});
  return settings;
}
}  // namespace

void take_shape_from_schedule_file(const ScheduleFile& file, const std::string& path,
                                   const std::vector<std::string>& args, ScheduleShape shape) {
  for (const ShapeSetting& setting : shape_settings(file)) {
    const std::string key = setting.key, flag = setting.flag;
    int& value = key == "pp" ? shape.stages : key == "micro_batches" ? shape.micro_batches : shape.virtual_stages;
    if (!flag_given(args, flag)) {
      value = setting.in_file;
      continue;
    }
    if (value != setting.in_file)
      throw UsageError(flag + " " + std::to_string(value) + " disagrees with --schedule-file " + path + ", which " +
                       setting.what + ": the file is the schedule; give " + flag + " " +
                       std::to_string(setting.in_file) + " or leave " + flag + " out");
  }
}

void check_imported_shape(const ScheduleFile& file, const std::string& path, const std::vector<std::string>& args,
                          const std::vector<RunImport>& imports, const RunConfig& config) {
  std::vector<std::pair<std::string, std::string>> origin;  // every file's, in the order they applied
  for (const RunImport& import : imports) origin.insert(origin.end(), import.origin.begin(), import.origin.end());
  for (const ShapeSetting& setting : shape_settings(file)) {
    if (flag_given(args, setting.flag)) continue;  // the flag overrides the file, and agrees with the schedule
    const int value = setting.key == std::string("pp")              ? config.layout.pp()
                      : setting.key == std::string("micro_batches") ? config.micro_batches
                                                                    : config.virtual_stages;
    if (value == setting.in_file) continue;
    for (auto it = origin.rbegin(); it != origin.rend(); ++it)  // the last file to set it
      if (it->first == setting.key)
        throw UsageError(it->second + " sets " + setting.flag + " " + std::to_string(value) +
                         ", which disagrees with --schedule-file " + path + ", which " + setting.what +
                         ": the file is the schedule; set it to " + std::to_string(setting.in_file) +
                         " there, or give " + setting.flag + " " + std::to_string(setting.in_file));
  }
}

std::optional<ScheduleFile> read_schedule_file_of(RunConfig& config, const std::vector<std::string>& args) {
  if (config.schedule_file.empty()) return std::nullopt;
  ScheduleFile file = load_schedule_file(config.schedule_file);
  take_shape_from_schedule_file(file, config.schedule_file, args,
                                {config.layout[Axis::pp], config.micro_batches, config.virtual_stages});
  return file;
}

int run_schedule(const std::vector<std::string>& args) {
  int stages = 4, micro_batches = 8, virtual_stages = 1;
  std::string kind = "1f1b", file;
  bool communication = false;
  float forward = 1.0f, backward = 2.0f, weight = -1.0f;  // weight < 0: half the backward
  ArgParser parser("shardscope-cli schedule",
                   "Print the per-stage action lists of a pipeline schedule (F3 / B3: forward / backward of\n"
                   "micro-batch 3) and the bubble of its modeled timeline.");
  parser.add_int("--pp", "Pipeline stages (p), 1-256; p × m at most 65536", &stages, 1, 256);
  parser.add_int("--micro-batches", "Micro-batches per step (m), 1-4096; p × m at most 65536", &micro_batches, 1, 4096);
  parser.add_string("--schedule", "gpipe|1f1b|zb-h1|zb-h2|interleaved-1f1b|zb-v", "Schedule", &kind);
  parser.add_int("--virtual-stages",
                 "Model chunks per stage (v) for interleaved-1f1b, 1-64 (F3.1: micro-batch 3 on the stage's chunk 1, "
                 "virtual stage p + s); p × m × v at most 65536",
                 &virtual_stages, 1, 64);
  parser.add_string("--schedule-file", "FILE",
                    "A schedule of your own instead of --schedule: CSV, a row per rank, cells "
                    "{stage}{F|B|I|W}{micro-batch} as torch.distributed.pipelining reads (0F0,0I0,0W0); it sets "
                    "--pp, --micro-batches and --virtual-stages (given, they must agree with it)",
                    &file);
  parser.add_switch("--communication", "Also list the sends and receives between stages", &communication);
  parser.add_float("--forward-time", "Modeled time of one forward on one stage, in (0, 1000000]", &forward);
  parser.add_float("--backward-time", "Modeled time of one backward on one stage, in (0, 1000000]", &backward);
  parser.add_float("--weight-time",
                   "Of the backward time, the part that is the weight gradient W, run apart by zb-h1, zb-h2 and zb-v "
                   "(the rest is B), in [0, backward time]; default half of it",
                   &weight);
  if (!parser.parse(args)) return 0;
  for (float t : {forward, backward})  // times add up over p·m actions: keep their sum finite
    if (!(t > 0.0f && t <= 1e6f)) throw UsageError("--forward-time and --backward-time must be in (0, 1000000]");
  if (weight == -1.0f) weight = backward / 2.0f;  // not given
  if (!(weight >= 0.0f && weight <= backward)) {
    char text[160];
    std::snprintf(text, sizeof text, "--weight-time %g is not in [0, --backward-time %g]: W is a part of the backward",
                  weight, backward);
    throw UsageError(text);
  }
  if (!file.empty()) {
    const ScheduleFile schedule = load_schedule_file(file);
    take_shape_from_schedule_file(schedule, file, args, {stages, micro_batches, virtual_stages});
    return print_schedule_file(schedule, file, communication, forward, backward, weight);
  }
  check_schedule_size(stages, micro_batches, virtual_stages);

  const PipelineScheduleKind k = parse_pipeline_schedule_kind(kind);
  const PipelineSchedule schedule = make_pipeline_schedule(k, stages, micro_batches, virtual_stages);
  std::fputs(format_pipeline_schedule(schedule, communication).c_str(), stdout);
  const bool zero_bubble =
      k == PipelineScheduleKind::zb_h1 || k == PipelineScheduleKind::zb_h2 || k == PipelineScheduleKind::zb_v;
  // A schedule without W runs B and W together: its B takes the whole backward.
  const PipelineTimeline t =
      zero_bubble ? simulate_pipeline_schedule(schedule, forward, backward - weight, 0, weight, chunk_placement(k))
                  : simulate_pipeline_schedule(schedule, forward, backward);
  std::printf("\n%s, p=%d, m=%d: modeled step %.1f time units, bubble %.1f%% (GPipe formula (p-1)/(m+p-1) = %.1f%%)\n",
              pipeline_schedule_name(k), stages, micro_batches, t.makespan, 100.0 * t.bubble_fraction,
              100.0 * gpipe_bubble_fraction(stages, micro_batches));
  if (k == PipelineScheduleKind::zb_v)  // --forward-time and --backward-time are one chunk's, half a stage
    std::printf("2 chunks per stage in a V (stage s: chunks s and 2p-1-s; F3.1: micro-batch 3 on chunk 1)\n");
  if (k == PipelineScheduleKind::interleaved_1f1b)  // --forward-time and --backward-time are one chunk's
    std::printf("v=%d chunks per stage: interleaved formula (p-1)/(v·m+p-1) = %.1f%%\n", virtual_stages,
                100.0 * interleaved_bubble_fraction(stages, micro_batches, virtual_stages));
  if (k == PipelineScheduleKind::zb_h1)
    std::printf("T_F=%g, T_B=%g, T_W=%g: ZB-H1 formula (p-1)(T_F+T_B-T_W) / (m(T_F+T_B+T_W) + that) = %.1f%%\n",
                forward, backward - weight, weight,
                100.0 * zb_h1_bubble_fraction(stages, micro_batches, forward, backward - weight, weight));
  if (k == PipelineScheduleKind::zb_h2)
    std::printf(
        "T_F=%g, T_B=%g, T_W=%g: ZB-H2 floor (p-1)T_F / (m(T_F+T_B+T_W) + that) = %.1f%%, the step's ends "
        "only (ZB-H1 formula %.1f%%)\n",
        forward, backward - weight, weight,
        100.0 * zb_h2_bubble_fraction(stages, micro_batches, forward, backward - weight, weight),
        100.0 * zb_h1_bubble_fraction(stages, micro_batches, forward, backward - weight, weight));
  print_in_flight(t);
  return 0;
}

}  // namespace shardscope::cli
