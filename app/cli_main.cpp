// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli: the engine without a window. Commands: train, presets, export, schedule, estimate, tokenize,
// hidden-states.
// Exit codes: 0 success, 1 internal error, 2 bad input (flag, file, config).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "cli_estimate.h"
#include "cli_export.h"
#include "cli_hidden_states.h"
#include "cli_launch.h"
#include "cli_schedule.h"
#include "cli_tokenize.h"
#include "cli_train.h"
#include "core/did_you_mean.h"
#include "core/error.h"
#include "model/model_config.h"
#include "train/trainer.h"

namespace shardscope::cli {
namespace {

constexpr int kExitBadInput = 2;


const char* kTopHelp =
    "Usage: shardscope-cli COMMAND [flags]\n"
    "\n"
    "Train GPT and BERT models and see what distributed training does.\n"
    "\n"
    "Commands:\n"
    "  train     Train a model on a text corpus (the shipped default corpus if --data is absent)\n"
    "  presets   List the model presets\n"
    "  export    Export a run recording (.ssrun) to a Perfetto / chrome://tracing trace\n"
    "  schedule  Print a pipeline schedule (GPipe or 1F1B) per stage, with its bubble\n"
    "  estimate  Predict per-GPU memory (by ledger category, with formulas), the fit and the step time\n"
    "  tokenize  Tokenize a text with a Hugging Face tokenizer (GPT-2 BPE or BERT WordPiece files)\n"
    "  hidden-states  Every layer's hidden states of a Hugging Face GPT-2 or BERT for a text\n"
    "  launch    Run a command as processes, one rank each, through mpirun (launch --nproc-per-node 4 -- train ...)\n"
    "\n"
    "Run 'shardscope-cli COMMAND --help' for the flags of a command.\n";


// What to make smaller when a command runs out of memory.
const char* memory_hint(const std::string& command) {
  if (command == "export") return "the recording needs more memory than this machine has";
  if (command == "schedule") return "try fewer --pp stages or --micro-batches";
  if (command == "estimate") return "the model or config is larger than this machine can plan";
  return "try a smaller --batch, --seq or model";
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
    if (args[0] == "export") return run_export(rest);
    if (args[0] == "schedule") return run_schedule(rest);
    if (args[0] == "estimate") return run_estimate(rest);
    if (args[0] == "tokenize") return run_tokenize(rest);
    if (args[0] == "hidden-states") return run_hidden_states(rest);
    if (args[0] == "launch") return run_launch(rest);
    const std::vector<std::string> commands{"train",    "presets",       "export", "schedule", "estimate",
                                            "tokenize", "hidden-states", "launch", "help"};
    std::fprintf(stderr, "shardscope-cli: unknown command '%s'%s\n\n%s", args[0].c_str(),
                 did_you_mean(args[0], commands).c_str(), kTopHelp);
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const FormatError& e) {
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
  } catch (const RankFailure& e) {  // a rank threw: every rank stopped, nothing was saved half-way
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
    return 1;
  } catch (const TrainingDiverged& e) {  // the run's numbers, not a bug: what ran is kept
    std::fprintf(stderr, "shardscope-cli %s: error: %s\n", args[0].c_str(), e.what());
    return 1;
  } catch (const OutOfMemory& e) {  // the input's size, not a bug: bad input (train reports its own, cli_train.cpp)
    std::fprintf(stderr, "shardscope-cli %s: error: %s (%s)\n", args[0].c_str(), e.what(), memory_hint(args[0]));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardscope-cli %s: error: out of memory (%s)\n", args[0].c_str(), memory_hint(args[0]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope-cli %s: internal error: %s\n", args[0].c_str(), e.what());
    return 1;
  }
  return kExitBadInput;
}
