// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/model_aliases.h"

// model_aliases.S: the files one after another, each ending where the next begins.
extern "C" const char shardscope_config_gpt3_175b[];
extern "C" const char shardscope_config_llama_2_7b[];
extern "C" const char shardscope_config_llama_2_13b[];
extern "C" const char shardscope_config_llama_2_70b[];
extern "C" const char shardscope_configs_end[];

namespace shardscope {

namespace {
std::string_view between(const char* begin, const char* end) {
  return {begin, static_cast<std::size_t>(end - begin)};
}
}  // namespace

const std::vector<ModelAlias>& model_aliases() {
  static const std::vector<ModelAlias> aliases = [] {
    const std::string_view gpt3 = between(shardscope_config_gpt3_175b, shardscope_config_llama_2_7b);
    return std::vector<ModelAlias>{
        {"gpt3-175b", "resources/examples/gpt3_175b_config.json", gpt3},
        {"gpt3", "resources/examples/gpt3_175b_config.json", gpt3},
        {"llama-2-7b", "resources/examples/llama_2_7b_config.json",
         between(shardscope_config_llama_2_7b, shardscope_config_llama_2_13b)},
        {"llama-2-13b", "resources/examples/llama_2_13b_config.json",
         between(shardscope_config_llama_2_13b, shardscope_config_llama_2_70b)},
        {"llama-2-70b", "resources/examples/llama_2_70b_config.json",
         between(shardscope_config_llama_2_70b, shardscope_configs_end)},
    };
  }();
  return aliases;
}

const ModelAlias* find_model_alias(std::string_view name) {
  for (const ModelAlias& alias : model_aliases())
    if (alias.name == name) return &alias;
  return nullptr;
}

}  // namespace shardscope
