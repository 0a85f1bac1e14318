// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// shardscope-cli tokenize: the ids and tokens a Hugging Face tokenizer gives a text.
int run_tokenize(const std::vector<std::string>& args);

}  // namespace shardscope::cli
