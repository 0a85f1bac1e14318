// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli train: flags -> RunConfig, progress on stdout, metrics JSONL,
// and the event recording (--record).
#include "cli_train.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "cli_args.h"
#include "core/error.h"
#include "events/event_queue.h"
#include "events/recording.h"
#include "model/model_config.h"
#include "train/metrics_json.h"
#include "train/trainer.h"

namespace shardscope::cli {
namespace {

// Ctrl-C: the first stops the run at the next layer of its step (the
// unfinished step is discarded; the finished ones keep their metrics) and
// exits 130; a second exits 130 at once. Only async-signal-safe calls here.
std::atomic<bool> g_stop{false};
extern "C" void on_interrupt(int) {
  if (g_stop.exchange(true)) _exit(130);
  static const char note[] = "\ninterrupted: stopping at the next layer (Ctrl-C again to quit at once)\n";
  [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, note, sizeof note - 1);
}

std::string human_bytes(std::int64_t bytes) {
  char text[32];
  if (bytes >= (1ll << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ll << 30));
  else if (bytes >= (1ll << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1ll << 20));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  return text;
}

// The flags of `train`: RunConfig fields directly, and the text of those that need parsing first.
struct TrainFlags {
  RunConfig config;
  int log_every = 10;
  std::int64_t seed = 0;
  float bucket_mb = 0.0f;
  std::string dp_mode = "ddp", checkpoint = "none", schedule = "1f1b", precision = "fp32", loss_scaler = "torch",
              gpus = "0", inject_overflow, inject_failure, record;
};

void add_model_and_optimizer_flags(ArgParser& parser, TrainFlags& f) {
  RunConfig& config = f.config;
  std::string presets;
  for (const auto& p : model_presets()) presets += (presets.empty() ? "" : ", ") + p.name;
  parser.add_string("--model", "PRESET", "Model preset: " + presets, &config.model);
  parser.add_int("--steps", "Optimizer steps to run", &config.steps, 1, 100'000'000);
  parser.add_int("--batch", "Global batch: sequences per optimizer step, split over --dp and --accum", &config.batch, 1,
                 1'000'000);
  parser.add_int("--seq", "Tokens per sequence; at most the model's max_seq", &config.seq, 1, 1'000'000);
  parser.add_float("--lr", "Peak learning rate (AdamW)", &config.lr);
  parser.add_float("--min-lr-ratio", "Cosine decay ends at lr times this", &config.min_lr_ratio);
  parser.add_int("--warmup", "Linear warm-up steps; -1: min(100, steps/10)", &config.warmup, -1, 100'000'000);
  parser.add_float("--weight-decay", "AdamW weight decay on matrices and embeddings", &config.weight_decay);
  parser.add_float("--grad-clip", "Clip the global gradient norm to this; 0: off", &config.grad_clip);
  f.seed = static_cast<std::int64_t>(config.seed);
  parser.add_int("--seed", "Seed of the weights and of the batch sampling", &f.seed, 0, INT64_MAX);
  parser.add_string("--data", "FILE", "UTF-8 text file to train on; absent: the shipped corpus (English + Chinese)",
                    &config.data);
  parser.add_int("--eval-every", "Evaluate on the held-out 10% every N steps and at the end; 0: never",
                 &config.eval_every, 0, 100'000'000);
  parser.add_int("--eval-batches", "Validation batches per evaluation", &config.eval_batches, 1, 100'000);
}

void add_parallel_flags(ArgParser& parser, TrainFlags& f) {
  RunConfig& config = f.config;
  parser.add_int("--threads", "CPU threads for all ranks together; 0: all cores", &config.threads, 0, 1024);
  parser.add_int("--ranks", "Ranks in all; must equal --dp x --pp (0: dp x pp)", &config.ranks, 0, 4096);
  parser.add_int("--dp", "Data-parallel ranks (threads of this process)", &config.dp, 1, 64);
  parser.add_int("--pp", "Pipeline stages (layers split evenly; the first embeds, the last runs the head)", &config.pp,
                 1, 64);
  parser.add_int("--micro-batches", "Pipeline micro-batches per accumulation step (m)", &config.micro_batches, 1,
                 100'000);
  parser.add_string("--schedule", "gpipe|1f1b",
                    "Pipeline schedule: gpipe (all forwards, then all backwards) or 1f1b (one forward, one backward)",
                    &f.schedule);
  parser.add_string("--dp-mode", "naive|ddp",
                    "How ranks combine gradients: ddp (ring all-reduce in buckets, overlapped with backward) or\n"
                    "      naive (torch.nn.DataParallel: rank 0 scatters, gathers, updates and broadcasts)",
                    &f.dp_mode);
  parser.add_int("--zero",
                 "ZeRO stage: 0 replicated, 1 optimizer states sharded, 2 + gradients, 3 + parameters (pp 1 only)",
                 &config.zero_stage, 0, 3);
  parser.add_int("--accum", "Gradient accumulation micro-steps per optimizer step", &config.accum, 1, 1'000'000);
  parser.add_string("--checkpoint", "none|full",
                    "Activation checkpointing: full keeps only each layer's input and recomputes in backward",
                    &f.checkpoint);
  f.bucket_mb = static_cast<float>(config.bucket_mb);
  parser.add_float("--bucket-mb", "DDP gradient bucket size in MB", &f.bucket_mb);
}

void add_precision_flags(ArgParser& parser, TrainFlags& f) {
  RunConfig& config = f.config;
  parser.add_string("--precision", "fp32|fp16|bf16",
                    "fp16/bf16: 16-bit parameters and gradients, fp32 master weights and AdamW states (fp16 with a\n"
                    "      dynamic loss scale)",
                    &f.precision);
  parser.add_string("--loss-scaler", "torch|deepspeed",
                    "fp16 loss-scale rules: torch GradScaler (default) or DeepSpeed's fp16 optimizer", &f.loss_scaler);
  parser.add_float("--loss-scale", "fp16: a static loss scale; 0: dynamic (default)", &config.loss_scale);
  parser.add_int("--initial-scale-power", "fp16: the first loss scale is 2^N (default 16)", &config.initial_scale_power,
                 0, 127);
  parser.add_int("--scale-window", "fp16: clean steps before the scale doubles (torch 2000, DeepSpeed 1000)",
                 &config.scale_window, 1, INT64_MAX);
  parser.add_int("--hysteresis", "fp16, DeepSpeed rules: overflows absorbed before the scale backs off (default 2)",
                 &config.hysteresis, 1, 1'000'000);
  parser.add_float("--min-loss-scale", "fp16, DeepSpeed rules: the scale never goes below this (default 1)",
                   &config.min_loss_scale);
  parser.add_string("--inject-overflow", "RANK:STEP",
                    "Test only: fp16, RANK writes an inf into its gradients at STEP, to see every rank skip it",
                    &f.inject_overflow);
}

void add_device_and_output_flags(ArgParser& parser, TrainFlags& f) {
  RunConfig& config = f.config;
  parser.add_string("--device", "cpu|cuda",
                    "Where the ranks compute: cpu (threads of this process, the default) or cuda (one GPU, through\n"
                    "      the CUDA plugin; where none is usable the run says so and uses the CPU)",
                    &config.device);
  parser.add_string("--gpus", "0,1,...",
                    "With --device cuda: one GPU that every rank shares, or one GPU per rank (NCCL between them)",
                    &f.gpus);
  parser.add_switch("--profile-ops",
                    "Time every backend op of rank 0 and print where a step goes (slower: each op waits for the\n"
                    "      device; steps after the first are counted)",
                    &config.profile_ops);
  parser.add_string("--record", "FILE", "Record the run's event stream to FILE (.ssrun)", &f.record);
  parser.add_string("--metrics-out", "FILE", "Write one JSON object per step to FILE (JSONL)", &config.metrics_out);
  parser.add_int("--log-every", "Print progress every N steps", &f.log_every, 1, 100'000'000);
  parser.add_string("--inject-failure", "RANK:STEP", "Test only: make RANK throw at STEP, to see all ranks stop",
                    &f.inject_failure);
}

ArgParser train_parser(TrainFlags& flags) {
  ArgParser parser("shardscope-cli train",
                   "Train a model on the CPU, on one rank or several (threads of this process), and print its\n"
                   "progress. With --metrics-out, also write one JSON object per step (schema in README.md);\n"
                   "with --record, the event stream of the run (open it in the GUI or export it).");
  add_model_and_optimizer_flags(parser, flags);
  add_parallel_flags(parser, flags);
  add_precision_flags(parser, flags);
  add_device_and_output_flags(parser, flags);
  return parser;
}

// "RANK:STEP" of the test-only --inject-* flags.
void parse_rank_and_step(const std::string& flag, const std::string& text, int& rank, std::int64_t& step) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError(flag + ": expected RANK:STEP, got '" + text + "'");
  rank = static_cast<int>(parse_int(flag, text.substr(0, colon), 0, 1023));
  step = parse_int(flag, text.substr(colon + 1), 1, INT64_MAX);
}

// "0,1,..." of --gpus.
std::vector<int> parse_gpu_list(const std::string& gpus) {
  std::vector<int> list;
  for (std::size_t at = 0; at <= gpus.size();) {
    const std::size_t comma = std::min(gpus.find(',', at), gpus.size());
    list.push_back(static_cast<int>(parse_int("--gpus", gpus.substr(at, comma - at), 0, 1023)));
    at = comma + 1;
  }
  return list;
}

// The flags given as text, parsed into the config (a mistake is a UsageError naming the flag).
void apply_text_flags(TrainFlags& f) {
  RunConfig& config = f.config;
  config.seed = static_cast<std::uint64_t>(f.seed);
  config.bucket_mb = f.bucket_mb;
  config.schedule = parse_pipeline_schedule_kind(f.schedule);
  if (f.dp_mode != "ddp" && f.dp_mode != "naive")
    throw UsageError("--dp-mode: '" + f.dp_mode + "' is not one of naive, ddp");
  config.dp_mode = f.dp_mode == "naive" ? DataParallelMode::naive : DataParallelMode::ddp;
  if (f.checkpoint != "none" && f.checkpoint != "full")
    throw UsageError("--checkpoint: '" + f.checkpoint + "' is not one of none, full");
  config.checkpoint = f.checkpoint == "full";
  config.precision = parse_precision(f.precision);
  config.gpus = parse_gpu_list(f.gpus);
  config.loss_scaler = parse_loss_scaler_rules(f.loss_scaler);
  if (!f.inject_overflow.empty())
    parse_rank_and_step("--inject-overflow", f.inject_overflow, config.overflow_rank, config.overflow_step);
  if (!f.inject_failure.empty())
    parse_rank_and_step("--inject-failure", f.inject_failure, config.fail_rank, config.fail_step);
}

// --record: the run's event stream in a file. Engine threads never wait for the
// disk: they push into a bounded queue, and this helper thread drains it into
// the recording.
class Recording {
 public:
  Recording(const std::string& path, const RunConfig& config)
      : path_(path), writer_(open_writer(path, config)), drainer_([this] { drain(); }) {}
  ~Recording() { stop_draining(); }

  EventQueue* queue() { return &queue_; }

  // After the run: every queued event written, the file complete.
  void close() {
    stop_draining();
    writer_->close();
  }

  void print_summary() const {
    std::printf("recorded %llu events to %s (%llu fine-grained events dropped by the full queue)\n",
                static_cast<unsigned long long>(writer_->events_written()), path_.c_str(),
                static_cast<unsigned long long>(queue_.dropped()));
  }

 private:
  static std::unique_ptr<RecordingWriter> open_writer(const std::string& path, const RunConfig& config) {
    try {
      return std::make_unique<RecordingWriter>(path, run_config_to_json(config).dump());
    } catch (const FormatError& e) {
      throw ConfigError(std::string("--record: ") + e.what());
    }
  }

  void drain() {
    std::vector<Event> batch;
    for (bool more = true; more;) {
      more = draining_.load();
      batch.clear();
      while (queue_.drain(batch, 4096) > 0) {
        for (const Event& e : batch) writer_->emit(e);
        batch.clear();
      }
      if (more) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void stop_draining() {
    draining_ = false;
    if (drainer_.joinable()) drainer_.join();
  }

  std::string path_;
  std::unique_ptr<RecordingWriter> writer_;
  EventQueue queue_;
  std::atomic<bool> draining_{true};
  std::thread drainer_;  // last: it starts once the members above exist
};

std::ofstream open_metrics(const std::string& path) {
  std::ofstream metrics;
  if (!path.empty()) {
    metrics.open(path, std::ios::trunc);
    if (!metrics) throw ConfigError("--metrics-out: cannot write '" + path + "'");
  }
  return metrics;
}

// The model, the data and the layout of the run, before its first step.
void print_run_header(const RunConfig& config, const std::string& dp_mode, Trainer& trainer) {
  if (!trainer.device_note().empty()) std::printf("note: %s\n", trainer.device_note().c_str());
  const auto& model = trainer.model();
  std::printf("model %s (%s): %lld parameters, C=%d L=%d H=%d vocab=%d\n", config.model.c_str(),
              std::string(model_kind_name(model.config().kind)).c_str(),
              static_cast<long long>(model.parameter_count()), model.config().channels, model.config().layers,
              model.config().heads, model.config().vocab);
  std::printf("data %s: %lld training / %lld validation tokens (bytes)\n", trainer.dataset().path().c_str(),
              static_cast<long long>(trainer.dataset().tokens(Split::train)),
              static_cast<long long>(trainer.dataset().tokens(Split::validation)));
  std::printf(
      "global batch %d x seq %d = %d tokens per step; %d rank%s (dp %d %s ZeRO-%d x pp %d %s); "
      "per rank: micro-batch %d, %d micro-batch%s x %d accumulation step%s; %lld steps; %s; backend %s\n",
      config.batch, config.seq, config.batch * config.seq, config.world_size(), config.world_size() > 1 ? "s" : "",
      config.dp, dp_mode.c_str(), config.zero_stage, config.pp, pipeline_schedule_name(config.schedule),
      config.micro_batch(), config.micro_batches, config.micro_batches > 1 ? "es" : "", config.accum,
      config.accum > 1 ? "s" : "", static_cast<long long>(config.steps),
      std::string(precision_name(config.precision)).c_str(), trainer.placement().c_str());
  std::fflush(stdout);
}

// One progress line: every log_every steps, the first and last, and any step with news (an eval, a skip).
void print_progress(const StepMetrics& m, const RunConfig& config, int log_every) {
  if (!(m.step == 1 || m.step % log_every == 0 || m.step == config.steps || m.eval_loss || m.skipped)) return;
  std::printf("step %6lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %8.0f tok/s | %6.1f ms | mem %s",
              static_cast<long long>(m.step), static_cast<long long>(config.steps), m.loss, m.lr, m.grad_norm,
              m.tokens_per_s, m.step_time_s * 1e3, human_bytes(m.memory.total()).c_str());
  if (m.eval_loss) std::printf(" | eval loss %.4f", *m.eval_loss);
  if (config.precision == Precision::fp16) std::printf(" | scale %g", static_cast<double>(m.loss_scale));
  if (m.skipped) std::printf(" | overflow: step skipped");
  std::printf("\n");
  std::fflush(stdout);
}

// What the closing lines report, gathered step by step.
struct RunTotals {
  float first_loss = 0.0f, last_loss = 0.0f;
  double total_time = 0.0;     // seconds, every step
  double profiled_time = 0.0;  // seconds, steps after the first (the first allocates and warms up)
  std::optional<float> last_eval;

  void add(const StepMetrics& m) {
    if (m.step == 1)
      first_loss = m.loss;
    else
      profiled_time += m.step_time_s;
    last_loss = m.loss;
    total_time += m.step_time_s;
    if (m.eval_loss) last_eval = m.eval_loss;
  }
};

// Runs every step (until Ctrl-C), writing each step's metrics and progress.
RunTotals train(Trainer& trainer, const RunConfig& config, int log_every, std::ofstream& metrics) {
  RunTotals totals;
  trainer.run(
      [&](const StepMetrics& m) {
        totals.add(m);
        if (m.step == 1) trainer.reset_op_profiles();  // the first step allocates and warms up
        if (metrics.is_open()) metrics << step_metrics_to_json(m).dump() << '\n' << std::flush;
        print_progress(m, config, log_every);
      },
      &g_stop);
  return totals;
}

// The closing lines: losses, time, and with --profile-ops where a step went.
void print_summary(Trainer& trainer, const RunConfig& config, const RunTotals& totals) {
  std::printf("done: %lld steps in %.1f s, loss %.4f -> %.4f%s\n", static_cast<long long>(trainer.steps_done()),
              totals.total_time, totals.first_loss, totals.last_loss,
              totals.last_eval ? (", eval loss " + std::to_string(*totals.last_eval)).c_str() : "");
  if (config.profile_ops && trainer.steps_done() > 1) {
    const int steps = static_cast<int>(trainer.steps_done() - 1);
    std::printf("\nrank 0, %s, per step over steps 2-%d (each op timed between two device waits):\n%s",
                trainer.backend_name().c_str(), steps + 1,
                format_op_profile(trainer.op_profile(0), steps, totals.profiled_time / steps).c_str());
  }
}

int train_command(const std::vector<std::string>& args) {
  TrainFlags flags;
  ArgParser parser = train_parser(flags);
  if (!parser.parse(args)) return 0;
  apply_text_flags(flags);
  const RunConfig& config = flags.config;
  validate_run_config(config);  // before anything is written
  const auto recording = flags.record.empty() ? nullptr : std::make_unique<Recording>(flags.record, config);
  Trainer trainer(config, recording ? recording->queue() : nullptr);
  std::ofstream metrics = open_metrics(config.metrics_out);
  std::signal(SIGINT, on_interrupt);  // before the header: once it is printed, Ctrl-C stops the run
  print_run_header(config, flags.dp_mode, trainer);

  const RunTotals totals = train(trainer, config, flags.log_every, metrics);
  if (recording) recording->close();
  print_summary(trainer, config, totals);
  if (recording) recording->print_summary();
  return g_stop.load() ? 130 : 0;
}

}  // namespace

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
