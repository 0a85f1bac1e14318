// SPDX-License-Identifier: GPL-3.0-or-later
// Names for the model configs ShardScope ships (resources/examples, embedded in
// the binary): `estimate --model gpt3-175b` reads the same Hugging Face
// config.json a user could pass as a file, through the same reader.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

struct ModelAlias {
  std::string_view name;         // what --model takes: "gpt3-175b", "llama-2-7b"
  std::string_view file;         // the shipped file, for messages: "resources/examples/gpt3_175b_config.json"
  std::string_view config_json;  // its text
};

// Every alias, in the order messages list them.
const std::vector<ModelAlias>& model_aliases();
// The alias called `name`, or nullptr.
const ModelAlias* find_model_alias(std::string_view name);

}  // namespace shardscope
