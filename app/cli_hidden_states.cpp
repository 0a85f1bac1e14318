// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli hidden-states: loads a Hugging Face model directory
// (io/hf_model.h), tokenizes --text with its tokenizer.json, runs one forward
// pass on the CPU (model/hidden_states.h) and writes the embeddings' output and
// the selected layers' outputs to a safetensors file ("hidden_states.0" ..
// "hidden_states.L", each (1, T, C), and "input_ids" (1, T)), or prints them as JSON.
#include "cli_hidden_states.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_args.h"
#include "core/memory_ledger.h"
#include "core/output_file.h"
#include "data/tokenizer.h"
#include "io/hf_model.h"
#include "io/safetensors.h"
#include "inspect/text_hidden_states.h"

namespace shardscope::cli {
namespace {

struct HiddenStatesFlags {
  std::string model, text, layers = "all", out;
  bool have_text = false, json = false;
};

ArgParser hidden_states_parser(HiddenStatesFlags& f) {
  ArgParser parser("shardscope-cli hidden-states",
                   "Run a Hugging Face GPT-2 or BERT (a directory with config.json, model.safetensors and\n"
                   "tokenizer.json) once over a text and save its hidden states as transformers returns them with\n"
                   "output_hidden_states=True: hidden_states.0 is the embeddings' output, hidden_states.l layer l's.");
  parser.add_string("--model", "DIR", "Hugging Face model directory (config.json, model.safetensors, tokenizer.json)",
                    &f.model);
  parser.add_flag("--text", "TEXT", "The text (UTF-8), tokenized with the model's tokenizer ([CLS] ... [SEP] for BERT)",
                  "", [&f](const std::string& value) { f.text = value, f.have_text = true; });
  parser.add_string("--layers", "all|N,M", "Which hidden states: all (0..L) or a list of indices (0 = embeddings)",
                    &f.layers);
  parser.add_string("--out", "FILE",
                    "Write them to FILE (.safetensors): hidden_states.N (1, T, C) and input_ids (1, T)", &f.out);
  parser.add_switch("--json", "Print one JSON object: ids, tokens and the selected states' values", &f.json);
  return parser;
}

// "all" or "N,M,...", each index within 0..L.
std::vector<int> parse_layers(const std::string& text, int layers) {
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i <= layers; ++i) out.push_back(i);
    return out;
  }
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > layers)
      throw UsageError("--layers '" + text + "': '" + part + "' is not a hidden-state index 0.." +
                       std::to_string(layers) + " (or use all)");
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      throw UsageError("--layers '" + text + "': " + part + " is listed twice");
    out.push_back(static_cast<int>(v));
    at = comma + 1;
  }
  return out;
}

void write_states(const std::string& out, const std::string& dir, const std::vector<std::int32_t>& ids,
                  const HiddenStates& hs, const std::vector<int>& layers) {
  const std::int64_t T = hs.tokens, C = hs.channels;
  std::vector<SafetensorsTensorOut> tensors{{"input_ids", "I32", {1, T}, ids.data()}};
  std::vector<std::string> names;
  names.reserve(layers.size());
  for (int l : layers) {
    names.push_back("hidden_states." + std::to_string(l));
    tensors.push_back({names.back(), "F32", {1, T, C}, hs.states[static_cast<std::size_t>(l)].data()});
  }
  write_safetensors({"--out", out}, tensors, {{"format", "pt"}, {"model", dir}});
}

// Each state's mean L2 norm per token (how the representation grows through
// the layers) and the mean cosine similarity between different tokens.
void print_summary(const HiddenStatesFlags& f, const TextHiddenStates& run, const std::vector<int>& layers) {
  std::printf("model %s (%s): %d layers, %d channels\n", f.model.c_str(),
              std::string(model_kind_name(run.config.kind)).c_str(), run.config.layers, run.config.channels);
  std::printf("%zu ids:", run.ids.size());
  for (std::int32_t id : run.ids) std::printf(" %d", id);
  std::printf("\n");
  for (int l : layers) {
    const std::vector<double> norms = token_norms(run.states, l);
    double total = 0.0;
    for (const double n : norms) total += n;
    std::printf("hidden_states.%d: mean token norm %.4f, mean cosine between tokens %.4f\n", l,
                total / static_cast<double>(norms.size()), mean_pairwise_cosine(run.states, l));
  }
  if (!f.out.empty()) std::printf("wrote %s\n", f.out.c_str());
}

void print_json(const HiddenStatesFlags& f, const TextHiddenStates& run, const std::vector<int>& layers) {
  const HiddenStates& hs = run.states;
  nlohmann::json states = nlohmann::json::object();
  for (int l : layers) {
    nlohmann::json rows = nlohmann::json::array();
    const std::vector<float>& s = hs.states[static_cast<std::size_t>(l)];
    for (int t = 0; t < hs.tokens; ++t)
      rows.push_back(std::vector<float>(s.begin() + t * hs.channels, s.begin() + (t + 1) * hs.channels));
    states[std::to_string(l)] = std::move(rows);
  }
  const nlohmann::json out = {{"model", f.model},        {"ids", run.ids}, {"tokens", run.tokens}, {"channels", hs.channels},
                              {"hidden_states", states}, {"out", f.out}};
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace

int run_hidden_states(const std::vector<std::string>& args) {
  HiddenStatesFlags f;
  ArgParser parser = hidden_states_parser(f);
  if (!parser.parse(args)) return 0;
  if (f.model.empty()) throw UsageError("--model DIR is required (see shardscope-cli hidden-states --help)");
  if (!f.have_text) throw UsageError("--text TEXT is required (see shardscope-cli hidden-states --help)");
  if (f.out.empty() && !f.json) throw UsageError("give --out FILE.safetensors, --json or both");
  if (!f.out.empty()) check_outputs(files_in_directory("--model", f.model), {{"--out", f.out}});  // weights, tokenizer

  const TextHiddenStates run =
      text_hidden_states(f.model, f.text, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const std::vector<int> layers = parse_layers(f.layers, run.config.layers);
  if (!f.out.empty()) write_states(f.out, f.model, run.ids, run.states, layers);
  if (f.json)
    print_json(f, run, layers);
  else
    print_summary(f, run, layers);
  return 0;
}

}  // namespace shardscope::cli
