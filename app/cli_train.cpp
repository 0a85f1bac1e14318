// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli train: flags -> RunConfig, progress on stdout, metrics JSONL,
// and the event recording (--record).
#include "cli_train.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "cli_args.h"
#include "cli_context_parallel.h"
#include "cli_expert_parallel.h"
#include "cli_job_events.h"
#include "cli_launch.h"
#include "cli_lesson_figures.h"
#include "cli_lessons.h"
#include "cli_schedule.h"
#include "cli_sequence_parallel.h"
#include "cli_train_header.h"
#include "cli_train_outputs.h"
#include "clock/schedule_summary.h"
#include "config/run_import.h"
#include "config/run_schema.h"
#include "core/byte_text.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "estimate/formula_text.h"
#include "events/event_queue.h"
#include "events/recording.h"
#include "model/mixture_of_experts.h"
#include "model/model_config.h"
#include "plan/data_parallel_traffic.h"
#include "plan/expert_parallel_traffic.h"
#include "plan/schedule_file.h"
#include "plan/sharding_plan.h"
#include "plan/tensor_parallel_traffic.h"
#include "train/checkpoint.h"
#include "train/lost_work.h"
#include "train/metrics_json.h"
#include "train/trainer.h"

namespace shardscope::cli {
namespace {

// Ctrl-C (SIGINT) or SIGTERM (kill, timeout, a service manager): the first
// stops the run at the next layer of its step (the unfinished step is
// discarded; the finished ones keep their metrics, the outputs are completed)
// and exits 128 + the signal (130, 143); a second exits so at once. Only
// async-signal-safe calls here. Under mpirun, SIGTERM stays the MPI watchdog's
// (mpirun ends a failed job with it).
std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};
extern "C" void on_interrupt(int signal) {
  if (g_stop.exchange(true)) _exit(128 + signal);
  g_stop_signal.store(signal);
  static const char ctrl_c[] = "\ninterrupted: stopping at the next op boundary (Ctrl-C again to quit at once)\n";
  static const char term[] =
      "\nterminated (SIGTERM): stopping at the next op boundary (a second SIGTERM quits at once)\n";
  const bool by_term = signal == SIGTERM;
  [[maybe_unused]] const ssize_t written =
      write(STDERR_FILENO, by_term ? term : ctrl_c, by_term ? sizeof term - 1 : sizeof ctrl_c - 1);
}

// The flags of `train`: every field of the run-config schema that has a flag
// (config/run_schema.h), then what only the command line has.
struct TrainFlags {
  RunConfig config;
  int log_every = 10;
  std::string record;
  std::string events_to;              // HOST:PORT of a listening GUI
  std::string deepspeed, accelerate;  // config files that set the run before the other flags
  std::string imported;               // what the run took from them (one line)
  std::string lesson;                 // --lesson NAME: its figures follow the summary
  std::optional<ScheduleFile> schedule;  // --schedule-file, read once (it sets --pp and --micro-batches)
  RunPlanPtr run;                        // `config`, validated, and its sharding plan (plan/run_plan.h)
};

void add_run_config_flags(ArgParser& parser, RunConfig& config) {
  const RunConfig defaults;
  for (const RunField& field : run_fields()) {
    if (field.flag.empty()) continue;
    const nlohmann::json value = field.get(defaults);
    std::string default_text(field.default_text);
    if (default_text.empty() && field.kind != FieldKind::toggle &&
        !(value.is_string() && value.get<std::string>().empty()))
      default_text = field_value_text(field, value);
    parser.add_flag(
        std::string(field.flag), std::string(field.value_name), std::string(field.help.en), default_text,
        [&config, &field](const std::string& text) { set_field(config, field, field_value_from_text(field, text)); });
  }
}

ArgParser train_parser(TrainFlags& flags) {
  ArgParser parser("shardscope-cli train",
                   "Train a model on the CPU, on one rank or several (threads of this process), and print its\n"
                   "progress. With --metrics-out, also write one JSON object per step (schema in README.md);\n"
                   "with --record, the event stream of the run (open it in the GUI or export it).");
  // train_command reads --lesson before parsing (lesson_argument), so the other flags apply on top of it.
  parser.add_flag("--lesson", "NAME",
                  "Run a lesson's run (tutorials/NAME/lesson.json, as the GUI's Try it loads it); the other\n"
                  "      flags change it. Lessons: " +
                      lesson_names(),
                  "", [](const std::string&) {});
  add_run_config_flags(parser, flags.config);
  parser.add_string("--deepspeed", "FILE",
                    "Set the run from a DeepSpeed JSON config (batch, ZeRO stage, fp16/bf16 and loss scaling,\n"
                    "      optimizer, scheduler, gradient clipping); the other flags override it",
                    &flags.deepspeed);
  parser.add_string("--accelerate", "FILE",
                    "Set the run from an accelerate YAML config (distributed_type, num_processes, mixed_precision,\n"
                    "      the DeepSpeed plugin and the JSON it points to); the other flags override it",
                    &flags.accelerate);
  parser.add_string("--record", "FILE", "Record the run's event stream to FILE (.ssrun)", &flags.record);
  parser.add_string("--events-to", "HOST:PORT",
                    "Stream the run's events, every rank's, to a listener (the GUI's File → Attach…)",
                    &flags.events_to);
  parser.add_int("--log-every", "Print progress every N steps", &flags.log_every, 1, 100'000'000);
  return parser;
}

// One progress line: every log_every steps, the first and last, and any step with news (an eval, a skip).
void print_progress(const StepMetrics& m, const RunConfig& config, int log_every) {
  if (!(m.step == 1 || m.step % log_every == 0 || m.step == config.steps || m.eval_loss || m.skipped)) return;
  std::printf("step %6lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | host %8.0f tok/s | %6.1f ms | mem %s",
              static_cast<long long>(m.step), static_cast<long long>(config.steps), m.loss, m.lr, m.grad_norm,
              m.tokens_per_s, m.step_time_s * 1e3, binary_bytes(m.memory.total()).c_str());
  if (m.virtual_step_s > 0)
    std::printf(" | modeled %.0f tok/s, %.3f ms", m.modeled_tokens_per_s, m.virtual_step_s * 1e3);
  if (m.eval_loss) std::printf(" | eval loss %.4f", *m.eval_loss);
  if (config.precision == Precision::fp16) std::printf(" | scale %g", static_cast<double>(m.loss_scale));
  if (m.skipped) std::printf(" | overflow: step skipped");
  if (m.moe)  // a mixture of experts: its load-balancing loss and the choices over capacity
    std::printf(" | aux loss %.4f | dropped %lld/%lld", m.moe->aux_loss(), static_cast<long long>(m.moe->dropped),
                static_cast<long long>(m.moe->routed));
  std::printf("\n");
  std::fflush(stdout);
}

// What the closing lines report, gathered step by step.
struct RunTotals {
  float first_loss = 0.0f, last_loss = 0.0f;
  double total_time = 0.0;        // seconds, every step
  double profiled_time = 0.0;     // seconds, steps after the first (the first allocates and warms up)
  double profiled_virtual = 0.0;  // the same steps on the virtual clock (0 on the wall clock)
  std::optional<float> last_eval;
  std::int64_t steps = 0;        // run by this process (a resumed run starts past 0)
  std::int64_t saved_step = -1;  // the last step checkpointed

  void add(const StepMetrics& m) {
    if (steps++ == 0)
      first_loss = m.loss;
    else
      profiled_time += m.step_time_s, profiled_virtual += m.virtual_step_s;
    last_loss = m.loss;
    total_time += m.step_time_s;
    if (m.eval_loss) last_eval = m.eval_loss;
  }
};

// --save-dir (train/checkpoint.h): the save in flight, if any, waited for and
// its line printed, with what it cost: the copy to memory is all the step loop
// waited; the files were written in the background. A failed save stops the
// run; the checkpoints saved before are left as they were.
void finish_checkpoint(Trainer& trainer) {
  try {
    const std::optional<CheckpointSave> save = trainer.finish_checkpoint();
    if (!save) return;
    std::printf(
        "checkpoint: step %lld saved to %s (training waited %.1f ms copying the state to memory; "
        "written in the background in %.1f ms)\n",
        static_cast<long long>(save->step), save->dir.c_str(), save->copy_s * 1e3, save->write_s * 1e3);
    std::fflush(stdout);
  } catch (const OutputError& e) {
    throw FormatError(std::string(e.what()) +
                      "; earlier checkpoints were left as they were; the run stopped after step " +
                      std::to_string(trainer.steps_done()));
  }
}

// A save begun: the one before it finished first; the state copied now, written while training goes on.
void begin_checkpoint(Trainer& trainer, const RunConfig& config, RunTotals& totals) {
  finish_checkpoint(trainer);
  trainer.begin_checkpoint(config.save_dir);
  totals.saved_step = trainer.steps_done();
}

// Runs every step (until Ctrl-C), writing each step's progress and metrics. A
// write error (the metrics' or the recording's) stops the run after that step.
RunTotals train(Trainer& trainer, const RunConfig& config, int log_every, TrainOutputs& outputs) {
  RunTotals totals;
  try {
    trainer.run(
        [&](const StepMetrics& m) {
          totals.add(m);
          if (m.step == 1) trainer.reset_op_profiles();  // the first step allocates and warms up
          print_progress(m, config, log_every);
          outputs.write_step(m);
          if (config.save_every > 0 && m.step % config.save_every == 0) begin_checkpoint(trainer, config, totals);
        },
        &g_stop);
    finish_checkpoint(trainer);  // the last periodic save ends with the steps
  } catch (const OutputError& e) {
    throw OutputError(std::string(e.what()) + "; '" + outputs.failed_path() + "' was left as it was; the run stopped " +
                      "after step " + std::to_string(trainer.steps_done()) + " of " + std::to_string(config.steps));
  }
  return totals;
}

// The ledger beside what the system charges the process: every rank's peak,
// summed (the ranks' peaks need not coincide), against the resident-set peak.
void print_memory_summary(const Trainer& trainer) {
  std::int64_t ledger = 0;
  const std::vector<int> ranks = trainer.local_ranks();  // under mpirun: this process's rank
  for (const int r : ranks) ledger += trainer.ledger(r).peak_total();
  const auto process = process_memory();
  const bool on_host = trainer.config().device != "cuda" || !trainer.device_note().empty();
  if (!process || !on_host) return;  // a GPU's ledger counts device memory, not this process's
  constexpr double kMiB = 1024.0 * 1024.0;
  const std::string whose =
      ranks.size() == 1 ? "the rank's peak"
                        : "each rank's peak, summed over this process's " + std::to_string(ranks.size()) + " ranks";
  std::printf(
      "memory: ledger peak %.1f MiB (%s) · process resident peak %.1f MiB "
      "(VmHWM: the ledger's buffers plus code, thread stacks and the data set)\n",
      static_cast<double>(ledger) / kMiB, whose.c_str(), static_cast<double>(process->peak_resident_bytes) / kMiB);
}

// "sent 1,234 per rank", or "sent 1,232 to 1,236 per rank (mean 1,234)" where
// ranks differ (DDP's uneven ring chunks, plan/data_parallel_traffic.h).
std::string bytes_text(double bytes) {
  const auto whole = static_cast<std::int64_t>(bytes);
  return static_cast<double>(whole) == bytes ? grouped(whole) : short_number(bytes, 12);
}
std::string per_rank_text(const std::vector<std::int64_t>& sent) {
  const auto [low, high] = std::minmax_element(sent.begin(), sent.end());
  if (*low == *high) return grouped(*low) + " bytes";
  double mean = 0;
  for (const std::int64_t b : sent) mean += static_cast<double>(b) / static_cast<double>(sent.size());
  return grouped(*low) + " to " + grouped(*high) + " bytes (mean " + bytes_text(mean) + ")";
}

// Bytes each data-parallel rank sent in one step for its model states, beside
// the papers' formula (plan/data_parallel_traffic.h); naive DataParallel: what
// rank 0 sent and received. Nothing where the collectives ran as whole native
// calls (NCCL): their transfers are not events.
void print_data_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                 std::int64_t step) {
  if (config.layout.dp() < 2) return;
  // A stage's ranks are dp x tp consecutive ones (layout/grid.h); data-parallel transfers stay within them.
  const MeasuredTraffic measured = events.data_parallel_traffic(step, config.layout.dp() * config.layout.tp());
  if (measured.sent.empty()) return;
  const ShardingPlan& plan = trainer.plan();
  const int extra = extra_embedding_gathers(trainer.model().config().kind);
  std::int64_t experts = 0;  // expert parallelism: the rank's experts, reduced over the ranks holding them
  for (const ParameterEntry& e : trainer.model().layout().entries()) experts += e.expert ? e.numel : 0;
  for (int stage = 0; stage < config.layout.pp(); ++stage) {
    const DataParallelTraffic f =
        config.expert_parallel > 1
            ? expert_data_parallel_traffic(plan, config.expert_parallel, plan.stage(stage).parameters() - experts,
                                           experts)
            : data_parallel_traffic(plan, plan.stage(stage),
                                    static_cast<std::int64_t>(config.accum) * config.micro_batches, extra);
    const std::string where = config.layout.pp() > 1 ? "stage " + std::to_string(stage) + " " : "";
    const std::string formula = " (step " + std::to_string(step) + "; formula " + f.formula + " = " +
                                bytes_text(f.bytes) + " with " + f.values + ": " + f.what + ")";
    if (plan.naive()) {
      const int root = plan.grid().rank_at(stage, 0);
      const auto at = [](const std::map<int, std::int64_t>& m, int r) { return m.count(r) ? m.at(r) : 0; };
      const std::int64_t sent = at(measured.sent, root), received = at(measured.received, root);
      std::printf("%sdata-parallel bytes through rank %d per step: sent %s + received %s = %s%s\n", where.c_str(), root,
                  grouped(sent).c_str(), grouped(received).c_str(), grouped(sent + received).c_str(), formula.c_str());
      continue;
    }
    std::vector<std::int64_t> sent;
    for (const int d : plan.grid().dp_group(stage))  // and each dp rank's tensor-parallel ranks
      for (const int r : plan.grid().group(d, Axis::tp))
        sent.push_back(measured.sent.count(r) ? measured.sent.at(r) : 0);
    std::printf("%sdata-parallel bytes sent per rank per step: %s%s\n", where.c_str(), per_rank_text(sent).c_str(),
                formula.c_str());
  }
}

// Bytes each tensor-parallel rank sent per layer per micro-batch in one step
// (Megatron's f and g), beside the formula (plan/tensor_parallel_traffic.h).
void print_tensor_parallel_traffic(const Trainer& trainer, const RunConfig& config, const ScheduleEvents& events,
                                   std::int64_t step) {
  if (config.layout.tp() < 2) return;
  const LayerTraffic measured = events.tensor_parallel_traffic(step);
  if (measured.empty()) return;
  std::vector<std::int64_t> sent;
  for (const auto& [key, bytes] : measured) sent.push_back(bytes);
  const TensorParallelTraffic f =
      tensor_parallel_layer_traffic(config.layout.tp(), config.micro_batch_size(), config.seq,
                                    trainer.model().config().channels, 4, config.checkpoint);
  std::printf(
      "tensor-parallel bytes sent per rank per layer per micro-batch: %s (step %lld; formula %s = %s with %s)\n",
      per_rank_text(sent).c_str(), static_cast<long long>(step), f.formula.c_str(), grouped(f.bytes).c_str(),
      f.values.c_str());
  // Sequence parallelism (Korthikanti et al. 2022): each all-reduce split into its two halves.
  if (config.sequence_parallel)
    std::printf(
        "sequence parallel: per layer 2 all-gathers + 2 reduce-scatters forward and the same backward, each "
        "(t−1)/t · b·s·h · e per rank: 8 · (t−1)/t · b·s·h · e, the bytes of the 4 all-reduces above%s\n",
        config.checkpoint ? " (the recompute repeats the forward's)" : "");
}

// The two throughputs, each with its clock, over the steps after the first.
void print_throughput(const Trainer& trainer, const RunConfig& config, const RunTotals& totals) {
  if (totals.steps < 2 || totals.profiled_time <= 0) return;
  const double tokens = static_cast<double>(config.batch) * config.seq * static_cast<double>(totals.steps - 1);
  const long long first = trainer.steps_done() - totals.steps + 1;  // past 1 when resumed
  std::printf("throughput over steps %lld-%lld: ", first + 1, static_cast<long long>(trainer.steps_done()));
  if (totals.profiled_virtual > 0)
    std::printf("modeled %.0f tok/s on %s (virtual clock) · ", tokens / totals.profiled_virtual,
                trainer.modeled_device().c_str());
  std::printf("measured host %.0f tok/s (wall clock)\n", tokens / totals.profiled_time);
}

// The closing lines: losses, time, the schedule's truth (pipeline bubble, DDP
// overlap; clock/schedule_summary.h), and with --profile-ops where a step went.
void print_summary(Trainer& trainer, const RunConfig& config, const RunTotals& totals, const JobEvents& events) {
  const long long done = trainer.steps_done(), first = done - totals.steps + 1;  // past 1 when resumed
  const std::string resumed =
      first > 1 ? " (" + std::to_string(first) + "-" + std::to_string(done) + " in this run)" : "";
  std::printf("done: %lld steps%s in %.1f s, loss %.4f -> %.4f%s\n", done, resumed.c_str(), totals.total_time,
              totals.first_loss, totals.last_loss,
              totals.last_eval ? (", eval loss " + std::to_string(*totals.last_eval)).c_str() : "");
  if (events.complete()) {  // under mpirun, once the other processes' events reached rank 0
    const ScheduleSummary schedule =
        summarize_schedule(events.schedule().events(), config.layout.dp() * config.layout.cp() * config.layout.tp(),
                           config.layout.pp(), config.micro_batches);
    const std::string_view clock = trainer.clock_text().starts_with("virtual") ? "virtual" : "wall";
    for (const std::string& line : schedule_summary_lines(schedule, clock)) std::printf("%s\n", line.c_str());
    RankWaits waits = events.schedule().waits(schedule.first_step);
    if (waits.first_step > 0) waits.last_step = std::max<std::int64_t>(waits.last_step, done);
    // A straggler's formula for DDP, whose collectives lie outside the compute spans: a pipeline's stages idle in
    // its bubble besides, and ZeRO and naive DataParallel wait inside their backward or optimizer spans.
    const RankStepTimes times =
        config.layout.pp() == 1 && config.zero_stage == 0 && config.dp_mode == DataParallelMode::ddp
            ? rank_step_times(events.schedule().events(), config.world_size(), waits.first_step, waits.last_step)
            : RankStepTimes{};
    for (const std::string& line :
         wait_summary_lines(waits, config.world_size(), config.slow_rank, config.slow_factor, times))
      std::printf("%s\n", line.c_str());
    print_data_parallel_traffic(trainer, config, events.schedule(), schedule.first_step);
    print_tensor_parallel_traffic(trainer, config, events.schedule(), schedule.first_step);
    print_sequence_parallel_activations(trainer, config);
    print_context_parallel_traffic(trainer, config, events.schedule(), schedule.first_step);
    print_expert_parallel_traffic(trainer, config, events.schedule(), schedule.first_step);
  } else {  // the bubble and the overlap need every rank's spans
    std::printf("schedule: not summarized (the events of some processes did not reach rank 0)\n");
  }
  print_throughput(trainer, config, totals);
  print_memory_summary(trainer);
  if (config.profile_ops && trainer.steps_done() > 1) {
    const int steps = static_cast<int>(trainer.steps_done() - 1);
    std::printf("\nrank 0, %s, per step over steps 2-%d (each op timed between two device waits):\n%s",
                trainer.backend_name().c_str(), steps + 1,
                format_op_profile(trainer.op_profile(0), steps, totals.profiled_time / steps).c_str());
  }
}

int train_ranks(TrainFlags& flags, const ProcessMode& mode);

// How long rank 0 waits for the other processes' last events: they end their
// streams as they finish the last step, a moment after it; after a failure
// the processes are being stopped, so only a short wait.
constexpr double kStreamsWait_s = 30.0;
constexpr double kFailedStreamsWait_s = 2.0;

// --accelerate and --deepspeed: the files set the run (over a lesson's), then
// every flag is applied again on top, wherever it stood on the command line.
TrainFlags apply_config_files(const std::vector<std::string>& args, const TrainFlags& parsed, bool warn) {
  TrainFlags out;
  if (const std::string lesson = lesson_argument(args); !lesson.empty()) out.config = lesson_run_config(lesson);
  out.config.layout[Axis::dp] = parsed.config.layout.dp();  // the batch arithmetic uses the run's layout
  out.config.layout[Axis::pp] = parsed.config.layout.pp();
  out.config.micro_batches = parsed.config.micro_batches;
  out.config.virtual_stages = parsed.config.virtual_stages;  // the schedule file's, or the flag's
  out.schedule = parsed.schedule;
  std::vector<RunImport> imports;
  if (!parsed.accelerate.empty())
    imports.push_back(import_accelerate_run(
        load_accelerate_config(parsed.accelerate), out.config, flag_given(args, "--dp"),
        parsed.schedule && !flag_given(args, "--pp") ? "--schedule-file " + parsed.config.schedule_file + " (its rows)"
                                                     : "--pp"));
  if (!parsed.deepspeed.empty())
    imports.push_back(import_deepspeed_run(load_deepspeed_config(parsed.deepspeed), out.config));
  const RunConfig from_files = out.config;
  ArgParser parser = train_parser(out);
  parser.parse(args);
  for (const RunImport& import : imports) {
    if (warn)
      for (const std::string& warning : import.warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
    out.imported += (out.imported.empty() ? "" : "; ") + import.summary;
  }
  std::string overridden;  // the flags that changed what the files set
  for (const RunImport& import : imports)
    for (const std::string& key : import.fields)
      if (const RunField& field = run_field(key); field.get(from_files) != field.get(out.config))
        overridden += (overridden.empty() ? "" : ", ") + std::string(field.flag);
  if (!overridden.empty()) out.imported += "; overridden by " + overridden;
  if (out.schedule) check_imported_shape(*out.schedule, out.config.schedule_file, args, imports, out.config);
  return out;
}

// The run, validated and planned (and read: a --schedule-file) once, then the
// checks that read the run: the lesson's figures, the --events-to address.
void plan_train_run(TrainFlags& flags) {
  flags.run = flags.schedule ? make_run_plan(flags.config, *flags.schedule) : make_run_plan(flags.config);
  if (!flags.lesson.empty()) check_lesson_figures(flags.lesson, flags.config);
  if (!flags.events_to.empty()) parse_stream_address(flags.events_to, "--events-to");
}

// The run the arguments give, checked (nullopt: --help was printed). `warn`:
// print the config files' warnings. `plan`: plan it now (plan_train_run); a
// process under mpirun plans once it has joined the job, with the job's settings.
std::optional<TrainFlags> parse_train_flags(const std::vector<std::string>& args, bool warn, bool plan = true) {
  TrainFlags flags;
  flags.lesson = lesson_argument(args);
  if (!flags.lesson.empty())
    flags.config = lesson_run_config(flags.lesson);  // the lesson's run first, so every other flag changes it
  ArgParser parser = train_parser(flags);
  if (!parser.parse(args)) return std::nullopt;
  flags.schedule = read_schedule_file_of(flags.config, args);  // before the config files' batch arithmetic
  if (!flags.deepspeed.empty() || !flags.accelerate.empty()) flags = apply_config_files(args, flags, warn);
  const RunConfig& config = flags.config;
  if (!config.init_from.empty() && flag_given(args, "--model"))
    throw UsageError("--model and --init-from " + config.init_from +
                     " both given: the model comes from the directory's config.json; drop --model");
  // Before anything is written: the run, then the outputs (none may be --data, the other output, a link or a device).
  if (plan) plan_train_run(flags);
  return flags;
}

// SHARDSCOPE_PLAN_COUNTS=1: how often this process validated a run config,
// built a sharding plan and read a --schedule-file (plan/run_plan.h), on
// stderr; a test holds a run to one of each (no read without a file).
void report_plan_counts() {
  if (const char* on = std::getenv("SHARDSCOPE_PLAN_COUNTS"); on == nullptr || std::string(on) != "1") return;
  std::fprintf(stderr, "plan counts: %lld validations, %lld sharding plans, %lld schedule file reads\n",
               static_cast<long long>(run_config_validations()), static_cast<long long>(sharding_plans_built()),
               static_cast<long long>(schedule_files_read()));
}

int train_command(const std::vector<std::string>& args) {
  // Under mpirun the run is planned once, after joining: the job sets the wall clock and rank 0's outputs.
  std::optional<TrainFlags> parsed = parse_train_flags(args, true, !MpiWorld::launched_by_mpirun());
  if (!parsed) return 0;
  TrainFlags& flags = *parsed;
  ProcessMode mode = join_mpi_job(flags.config, flags.record);  // under mpirun: this process runs one rank
  if (flags.run == nullptr) plan_train_run(flags);  // a refusal exits 2 in every process, as a wrong -np does
  try {
    const int status = train_ranks(flags, mode);
    report_plan_counts();
    return status;
  } catch (const RankFailure&) {  // every rank has stopped: the other processes know
    if (mode.world == nullptr) throw;
    rethrow_naming_rank(mode.process.rank);
  } catch (const std::exception& e) {
    if (mode.world == nullptr) throw;
    mode.world->abort(mode.process.rank, e.what());  // the other processes stop too
    rethrow_naming_rank(mode.process.rank);
  }
}

int train_ranks(TrainFlags& flags, const ProcessMode& mode) {
  const RunConfig& config = flags.run->config();
  if (!mode.prints() && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;  // rank 0 reports the run
  check_train_outputs(config, flags.record, {{"--deepspeed", flags.deepspeed}, {"--accelerate", flags.accelerate}});
  ignore_file_size_signal();
  TrainOutputs outputs(flags.run, flags.record);
  JobEvents job_events(mode, *flags.run, flags.events_to, outputs.events());  // every rank's: summary and outputs
  Trainer trainer(flags.run, job_events.sink(), {}, mode.process);  // reads --data: a refused run has opened no output
  if (!config.save_dir.empty()) check_save_dir(config.save_dir, trainer.steps_done(), config.steps, config.save_every);
  std::signal(SIGINT, on_interrupt);  // before the header: once it is printed, Ctrl-C stops the run, outputs complete
  if (mode.world == nullptr) std::signal(SIGTERM, on_interrupt);
  if (mode.prints() && !flags.imported.empty()) std::printf("%s\n", flags.imported.c_str());
  if (mode.prints()) print_run_header(config, trainer);
  outputs.open();

  RunTotals totals;
  try {
    totals = train(trainer, config, flags.log_every, outputs);
  } catch (...) {
    job_events.finish(kFailedStreamsWait_s);
    outputs.keep_after_failure();  // a rank failed or an output could not be written: keep what was written well
    try {
      throw;
    } catch (const RankFailure& failure) {  // a rank failed (not the run's size): what a restart repeats
      // A save still in flight settles first (the destructor would wait for it anyway), so the
      // text counts it if it committed, and its line says so. Under mpirun the failing process
      // held its abort until that save ended (Trainer::abort_world), so a save every process had
      // written is committed, not cut short.
      try {
        finish_checkpoint(trainer);
      } catch (...) {
      }
      if (mode.prints() && !failure.out_of_memory())
        std::fprintf(stderr, "%s\n", lost_work_text(config.save_dir, config.save_every, trainer.steps_done()).c_str());
    } catch (...) {
    }
    throw;
  }
  job_events.finish(kStreamsWait_s);
  outputs.finish();  // also after Ctrl-C: complete metrics and a readable recording
  if (!config.save_dir.empty() && totals.saved_step != trainer.steps_done()) {
    if (g_stop.load()) {  // a step cut short may have left ranks apart: only whole saves count
      std::printf("checkpoint: not saved at the end (interrupted); --resume %s takes the last one\n",
                  config.save_dir.c_str());
    } else {
      begin_checkpoint(trainer, config, totals);
      finish_checkpoint(trainer);
    }
  }
  if (mode.prints()) {
    print_summary(trainer, config, totals, job_events);
    outputs.print_summary();
    if (!flags.lesson.empty() && !g_stop.load()) print_lesson_figures(flags.lesson, config);
  }
  return g_stop.load() ? 128 + g_stop_signal.load() : 0;
}

}  // namespace

bool check_train_for_processes(const std::vector<std::string>& args, int processes) {
  const std::optional<TrainFlags> flags = parse_train_flags(args, false);
  if (!flags) return false;
  check_process_layout(flags->config, processes, true);
  return true;
}

int run_train(const std::vector<std::string>& args) {
  try {
    return train_command(args);
  } catch (const OutOfMemory& e) {  // the run's size, not a bug: bad input (exit 2)
    throw ConfigError(std::string(e.what()) + " (try a smaller --batch, --seq or model)");
  } catch (const RankFailure& e) {
    if (!e.out_of_memory()) throw;
    throw ConfigError(std::string(e.what()) + " (try a smaller --batch, --seq or model)");
  } catch (const std::bad_alloc&) {
    throw ConfigError("out of memory (try a smaller --batch, --seq or model)");
  }
}

}  // namespace shardscope::cli
