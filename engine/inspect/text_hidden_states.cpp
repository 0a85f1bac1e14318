// SPDX-License-Identifier: GPL-3.0-or-later
#include "inspect/text_hidden_states.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/memory_ledger.h"
#include "data/tokenizer.h"
#include "io/hf_model.h"
#include "model/model.h"
#include "ops/backend.h"

namespace shardscope {

TextHiddenStates text_hidden_states(const std::string& dir, const std::string& text, int threads) {
  TextHiddenStates out;
  out.dir = dir;
  const HfModel loaded = read_hf_model_dir(dir);
  out.config = loaded.config;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(dir);
  out.ids = tokenizer->encode(text);
  if (out.ids.empty()) throw ConfigError("the text is empty after tokenizing: nothing to run the model on");
  for (const std::int32_t id : out.ids) out.tokens.push_back(tokenizer->token_text(id).value_or(""));
  MemoryLedger ledger;
  const auto backend = make_cpu_backend({std::max(1, threads)});
  const auto model = make_model(loaded.config, *backend, ledger);
  backend->upload(model->params(), loaded.parameters.data(), model->parameter_count() * 4);
  out.states = compute_hidden_states(*model, out.ids);
  return out;
}

std::string pretrained_minilm_dir() {
  const char* cache = std::getenv("SHARDSCOPE_MODEL_CACHE");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = cache != nullptr ? std::string(cache)
                           : xdg != nullptr ? std::string(xdg) + "/shardscope"
                                            : std::string(home != nullptr ? home : ".") + "/.cache/shardscope";
  return base + "/all-MiniLM-L6-v2";
}

namespace {
const float* token_row(const HiddenStates& s, int layer, int t) {
  return s.states.at(static_cast<std::size_t>(layer)).data() + static_cast<std::size_t>(t) * s.channels;
}

double dot(const float* a, const float* b, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}
}  // namespace

std::vector<double> token_norms(const HiddenStates& states, int layer) {
  std::vector<double> out;
  for (int t = 0; t < states.tokens; ++t) {
    const float* row = token_row(states, layer, t);
    out.push_back(std::sqrt(dot(row, row, states.channels)));
  }
  return out;
}

std::vector<double> token_cosines(const HiddenStates& states, int layer) {
  const int T = states.tokens;
  const std::vector<double> norms = token_norms(states, layer);
  std::vector<double> out(static_cast<std::size_t>(T) * T, 0.0);
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      const double denominator = norms[static_cast<std::size_t>(i)] * norms[static_cast<std::size_t>(j)];
      const double c = i == j ? 1.0
                       : denominator > 0.0
                           ? dot(token_row(states, layer, i), token_row(states, layer, j), states.channels) / denominator
                           : 0.0;
      out[static_cast<std::size_t>(i) * T + j] = c;
    }
  }
  return out;
}

double mean_pairwise_cosine(const HiddenStates& states, int layer) {
  const int T = states.tokens;
  if (T < 2) return 0.0;
  const std::vector<double> c = token_cosines(states, layer);
  double sum = 0.0;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j)
      if (i != j) sum += c[static_cast<std::size_t>(i) * T + j];
  return sum / (static_cast<double>(T) * (T - 1));
}

}  // namespace shardscope
