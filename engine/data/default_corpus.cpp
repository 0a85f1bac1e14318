// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/default_corpus.h"

extern "C" const char shardscope_default_corpus_begin[];
extern "C" const char shardscope_default_corpus_end[];

namespace shardscope {

std::string_view default_corpus() {
  return {shardscope_default_corpus_begin,
          static_cast<std::size_t>(shardscope_default_corpus_end - shardscope_default_corpus_begin)};
}

}  // namespace shardscope
