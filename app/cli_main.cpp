// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli: the engine without a window. Commands: train, presets.
// Exit codes: 0 success, 1 internal error, 2 bad input (flag, file, config).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "core/error.h"
#include "model/model_config.h"
#include "train/metrics_json.h"
#include "train/trainer.h"

namespace shardscope::cli {
namespace {

constexpr int kExitBadInput = 2;

std::atomic<bool> g_stop{false};
extern "C" void on_interrupt(int) { g_stop.store(true); }

const char* kTopHelp =
    "Usage: shardscope-cli COMMAND [flags]\n"
    "\n"
    "Train GPT and BERT models and see what distributed training does.\n"
    "\n"
    "Commands:\n"
    "  train     Train a model on a text corpus (the shipped default corpus if --data is absent)\n"
    "  presets   List the model presets\n"
    "\n"
    "Run 'shardscope-cli COMMAND --help' for the flags of a command.\n";

std::string human_bytes(std::int64_t bytes) {
  char text[32];
  if (bytes >= (1ll << 30)) std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ll << 30));
  else if (bytes >= (1ll << 20)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1ll << 20));
  else std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  return text;
}

int run_presets(const std::vector<std::string>& args) {
  ArgParser parser("shardscope-cli presets", "List the model presets with their shapes and parameter counts.");
  if (!parser.parse(args)) return 0;
  std::printf("%-12s %-5s %7s %7s %5s %5s %5s %14s\n", "preset", "kind", "vocab", "max_seq", "C", "L", "H",
              "parameters");
  for (const auto& p : model_presets())
    std::printf("%-12s %-5s %7d %7d %5d %5d %5d %14lld\n", p.name.c_str(), std::string(model_kind_name(p.kind)).c_str(),
                p.vocab, p.max_seq, p.channels, p.layers, p.heads,
                static_cast<long long>(analytic_parameter_count(p)));
  return 0;
}

int run_train(const std::vector<std::string>& args) {
  RunConfig config;
  int log_every = 10;
  std::string presets;
  for (const auto& p : model_presets()) presets += (presets.empty() ? "" : ", ") + p.name;
  ArgParser parser("shardscope-cli train",
                   "Train a model on the CPU and print its progress. With --metrics-out, also write one JSON\n"
                   "object per step (schema in README.md).");
  parser.add_string("--model", "PRESET", "Model preset: " + presets, &config.model);
  parser.add_int("--steps", "Optimizer steps to run", &config.steps, 1, 100'000'000);
  parser.add_int("--batch", "Sequences per optimizer step (the global batch)", &config.batch, 1, 1'000'000);
  parser.add_int("--seq", "Tokens per sequence; at most the model's max_seq", &config.seq, 1, 1'000'000);
  parser.add_float("--lr", "Peak learning rate (AdamW)", &config.lr);
  parser.add_float("--min-lr-ratio", "Cosine decay ends at lr times this", &config.min_lr_ratio);
  parser.add_int("--warmup", "Linear warm-up steps; -1: min(100, steps/10)", &config.warmup, -1, 100'000'000);
  parser.add_float("--weight-decay", "AdamW weight decay on matrices and embeddings", &config.weight_decay);
  parser.add_float("--grad-clip", "Clip the global gradient norm to this; 0: off", &config.grad_clip);
  std::int64_t seed = static_cast<std::int64_t>(config.seed);
  parser.add_int("--seed", "Seed of the weights and of the batch sampling", &seed, 0, INT64_MAX);
  parser.add_string("--data", "FILE", "UTF-8 text file to train on; absent: the shipped corpus (English + Chinese)",
                    &config.data);
  parser.add_int("--eval-every", "Evaluate on the held-out 10% every N steps and at the end; 0: never",
                 &config.eval_every, 0, 100'000'000);
  parser.add_int("--eval-batches", "Validation batches per evaluation", &config.eval_batches, 1, 100'000);
  parser.add_int("--threads", "CPU threads; 0: all cores", &config.threads, 0, 1024);
  parser.add_string("--metrics-out", "FILE", "Write one JSON object per step to FILE (JSONL)", &config.metrics_out);
  parser.add_int("--log-every", "Print progress every N steps", &log_every, 1, 100'000'000);
  if (!parser.parse(args)) return 0;
  config.seed = static_cast<std::uint64_t>(seed);

  Trainer trainer(config);
  std::ofstream metrics;
  if (!config.metrics_out.empty()) {
    metrics.open(config.metrics_out, std::ios::trunc);
    if (!metrics) throw ConfigError("--metrics-out: cannot write '" + config.metrics_out + "'");
  }
  const auto& model = trainer.model();
  std::printf("model %s (%s): %lld parameters, C=%d L=%d H=%d vocab=%d\n", config.model.c_str(),
              std::string(model_kind_name(model.config().kind)).c_str(),
              static_cast<long long>(model.parameter_count()), model.config().channels, model.config().layers,
              model.config().heads, model.config().vocab);
  std::printf("data %s: %lld training / %lld validation tokens (bytes)\n", trainer.dataset().path().c_str(),
              static_cast<long long>(trainer.dataset().tokens(Split::train)),
              static_cast<long long>(trainer.dataset().tokens(Split::validation)));
  std::printf("batch %d x seq %d = %d tokens per step, %lld steps, backend %s\n", config.batch, config.seq,
              config.batch * config.seq, static_cast<long long>(config.steps), trainer.backend_name().c_str());
  std::fflush(stdout);

  std::signal(SIGINT, on_interrupt);
  float first_loss = 0.0f, last_loss = 0.0f;
  double total_time = 0.0;
  std::optional<float> last_eval;
  trainer.run(
      [&](const StepMetrics& m) {
        if (m.step == 1) first_loss = m.loss;
        last_loss = m.loss;
        total_time += m.step_time_s;
        if (m.eval_loss) last_eval = m.eval_loss;
        if (metrics.is_open()) metrics << step_metrics_to_json(m).dump() << '\n' << std::flush;
        if (m.step == 1 || m.step % log_every == 0 || m.step == config.steps || m.eval_loss) {
          std::printf("step %6lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %8.0f tok/s | %6.1f ms | mem %s",
                      static_cast<long long>(m.step), static_cast<long long>(config.steps), m.loss, m.lr,
                      m.grad_norm, m.tokens_per_s, m.step_time_s * 1e3, human_bytes(m.memory.total()).c_str());
          if (m.eval_loss) std::printf(" | eval loss %.4f", *m.eval_loss);
          std::printf("\n");
          std::fflush(stdout);
        }
      },
      &g_stop);
  std::printf("done: %lld steps in %.1f s, loss %.4f -> %.4f%s\n", static_cast<long long>(trainer.steps_done()),
              total_time, first_loss, last_loss,
              last_eval ? (", eval loss " + std::to_string(*last_eval)).c_str() : "");
  return g_stop.load() ? 130 : 0;
}

}  // namespace
}  // namespace shardscope::cli

int main(int argc, char** argv) {
  using namespace shardscope;
  using namespace shardscope::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kTopHelp, args.empty() ? stderr : stdout);
    return args.empty() ? kExitBadInput : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "train") return run_train(rest);
    if (args[0] == "presets") return run_presets(rest);
    std::fprintf(stderr, "shardscope-cli: unknown command '%s'\n\n%s", args[0].c_str(), kTopHelp);
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const FormatError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardscope-cli %s: error: out of memory (try a smaller --batch, --seq or model)\n",
                 args[0].c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope-cli %s: internal error: %s\n", args[0].c_str(), e.what());
    return 1;
  }
  return kExitBadInput;
}
