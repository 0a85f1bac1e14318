// SPDX-License-Identifier: GPL-3.0-or-later
// A text's hidden states in a Hugging Face model directory (config.json,
// model.safetensors, tokenizer.json), and the two measures the BERT lesson
// draws from them: how long each token's vector is at every layer, and how
// alike the tokens' vectors are (cosine similarity), layer by layer. Shared by
// `shardscope-cli hidden-states` and the GUI's Hidden states view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/hidden_states.h"
#include "model/model_config.h"

namespace shardscope {

struct TextHiddenStates {
  std::string dir;
  ModelConfig config;
  std::vector<std::int32_t> ids;
  std::vector<std::string> tokens;  // each id's text in the vocabulary ("[CLS]", "##ing", "猫"; "" if none)
  HiddenStates states;              // L + 1: the embeddings' output, then every layer's
};

// Loads the model and its tokenizer from `dir` (io/hf_model.h), tokenizes
// `text` and runs one forward pass on the CPU with `threads` threads.
// ConfigError / FormatError naming the file as read_hf_model_dir and
// load_tokenizer do; ConfigError when the text tokenizes to nothing or past max_seq.
TextHiddenStates text_hidden_states(const std::string& dir, const std::string& text, int threads);

// Where scripts/fetch_minilm.sh puts all-MiniLM-L6-v2: $SHARDSCOPE_MODEL_CACHE,
// else $XDG_CACHE_HOME/shardscope, else ~/.cache/shardscope, then /all-MiniLM-L6-v2.
std::string pretrained_minilm_dir();

// The L2 norm of every token's vector in hidden state `layer` (T values).
std::vector<double> token_norms(const HiddenStates& states, int layer);

// cos(a, b) = a·b / (|a| |b|) between every pair of tokens in hidden state
// `layer`: T x T, row-major, 1 on the diagonal (0 for a zero vector).
std::vector<double> token_cosines(const HiddenStates& states, int layer);

// The mean of token_cosines over the pairs of different tokens (0 with one token).
double mean_pairwise_cosine(const HiddenStates& states, int layer);

}  // namespace shardscope
