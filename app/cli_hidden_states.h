// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// shardscope-cli hidden-states: every layer's hidden states of a Hugging Face
// GPT-2 or BERT for a text, as transformers' output_hidden_states=True.
int run_hidden_states(const std::vector<std::string>& args);

}  // namespace shardscope::cli
