// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/text_dataset.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/output_file.h"
#include "core/rng.h"
#include "data/byte_tokenizer.h"
#include "data/masked_lm.h"

namespace shardscope {

TextDataset::TextDataset(const std::string& path, int min_window) : path_(path) {
  require_regular_input({"--data", path});  // a FIFO would block the read, a directory reads as nothing
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("--data: cannot open '" + path + "' (missing file or no permission)");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) throw ConfigError("--data: '" + path + "' is empty");
  load(ByteTokenizer::encode(text.str()), min_window);
}

TextDataset TextDataset::from_text(const std::string& text, int min_window, const std::string& name) {
  TextDataset d;
  d.path_ = name;
  d.load(ByteTokenizer::encode(text), min_window);
  return d;
}

void TextDataset::load(const std::vector<std::int32_t>& ids, int min_window) {
  const auto n = static_cast<std::int64_t>(ids.size());
  const std::int64_t n_val = n / 10;
  // Each split needs one window of T + 1 tokens (inputs plus shifted targets).
  if (n_val < min_window + 1)
    throw ConfigError("--data: '" + path_ + "' has " + std::to_string(n) + " tokens; need at least " +
                      std::to_string(10 * (min_window + 1)) + " so the 10% validation split holds one window of " +
                      std::to_string(min_window + 1));
  train_.assign(ids.begin(), ids.end() - n_val);
  validation_.assign(ids.end() - n_val, ids.end());
}

std::int64_t TextDataset::tokens(Split split) const {
  return static_cast<std::int64_t>(split == Split::train ? train_.size() : validation_.size());
}

BatchData TextDataset::batch(ModelKind kind, Split split, std::uint64_t seed, std::int64_t step, std::int64_t first,
                             int B, int T) const {
  const auto& src = split == Split::train ? train_ : validation_;
  if (static_cast<std::int64_t>(src.size()) < T + 1)
    throw ConfigError("sequence length " + std::to_string(T) + " is longer than the " +
                      (split == Split::train ? std::string("training") : std::string("validation")) + " split of '" +
                      path_ + "' allows");
  BatchData out;
  out.B = B;
  out.T = T;
  const auto n = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  out.input_ids.resize(n);
  out.targets.resize(n);
  out.attention_mask.assign(n, 1);
  const std::uint64_t split_tag = split == Split::train ? 1 : 2;
  const auto windows = static_cast<std::uint64_t>(src.size()) - static_cast<std::uint64_t>(T);
  for (int b = 0; b < B; ++b) {
    Rng rng(mix_seed(seed ^ (split_tag << 62), static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(first + b)));
    const std::int32_t* window = src.data() + rng.below(windows);
    std::int32_t* ids = out.input_ids.data() + static_cast<std::size_t>(b) * T;
    std::int32_t* tgt = out.targets.data() + static_cast<std::size_t>(b) * T;
    if (kind == ModelKind::gpt) {
      for (int t = 0; t < T; ++t) {
        ids[t] = window[t];
        tgt[t] = window[t + 1];
      }
    } else {
      mask_tokens(window, ids, tgt, T, rng);
    }
  }
  return out;
}

}  // namespace shardscope
