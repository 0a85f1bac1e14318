// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/text_dataset.h"

#include <filesystem>
#include <fstream>
#include <new>

#include "core/error.h"
#include "core/output_file.h"
#include "core/rng.h"
#include "data/masked_lm.h"

namespace shardscope {

namespace {
// The file's bytes in one vector of its size (a regular file's size is known
// up front, so the vector never grows past it: the peak is the file itself).
std::vector<std::uint8_t> read_bytes(const std::string& path) {
  require_regular_input({"--data", path});  // a FIFO would block the read, a directory reads as nothing
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("--data: cannot open '" + path + "' (missing file or no permission)");
  std::vector<std::uint8_t> bytes;
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  try {
    if (!error) bytes.reserve(size);
    std::vector<char> chunk(std::size_t{1} << 20);
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
      bytes.insert(bytes.end(), chunk.data(), chunk.data() + in.gcount());
  } catch (const std::bad_alloc&) {
    throw ConfigError("--data: '" + path + "' (" + std::to_string(error ? bytes.size() : size) +
                      " bytes) does not fit in this machine's memory; train on a part of it");
  }
  if (in.bad()) throw ConfigError("--data: cannot read '" + path + "' (an I/O error)");
  return bytes;
}
}  // namespace

TextDataset::TextDataset(const std::string& path, int min_window, const Tokenizer* tokenizer)
    : path_(path), bytes_(read_bytes(path)) {
  if (bytes_.empty()) throw ConfigError("--data: '" + path + "' is empty");
  if (tokenizer != nullptr) tokenize(*tokenizer);
  split(min_window);
}

TextDataset TextDataset::from_text(std::string_view text, int min_window, const std::string& name,
                                   const Tokenizer* tokenizer) {
  TextDataset d;
  d.path_ = name;
  d.bytes_.assign(text.begin(), text.end());
  if (tokenizer != nullptr) d.tokenize(*tokenizer);
  d.split(min_window);
  return d;
}

void TextDataset::tokenize(const Tokenizer& tokenizer) {
  try {
    ids_ = tokenizer.encode(std::string_view(reinterpret_cast<const char*>(bytes_.data()), bytes_.size()), false);
  } catch (const ConfigError& e) {
    throw ConfigError("--data: '" + path_ + "': " + e.what());
  }
  bytes_ = {};
  token_kind_ = std::string(tokenizer.kind()) + " tokens";
  masking_.random_vocab = tokenizer.vocab_size();
  masking_.mask_id = tokenizer.special_ids().mask;  // -1 (none): BERT runs refuse it in batch()
}

void TextDataset::split(int min_window) {
  const std::int64_t n = size();
  const std::int64_t n_val = n / 10;
  // Each split needs one window of T + 1 tokens (inputs plus shifted targets).
  if (n_val < min_window + 1)
    throw ConfigError("--data: '" + path_ + "' has " + std::to_string(n) + " tokens; need at least " +
                      std::to_string(10 * (static_cast<std::int64_t>(min_window) + 1)) +
                      " so the 10% validation split holds one window of " + std::to_string(min_window + 1));
  train_end_ = n - n_val;
}

std::int64_t TextDataset::tokens(Split split) const {
  return split == Split::train ? train_end_ : size() - train_end_;
}

BatchData TextDataset::batch(ModelKind kind, Split split, std::uint64_t seed, std::int64_t step, std::int64_t first,
                             int B, int T) const {
  const std::int64_t begin = split == Split::train ? 0 : train_end_;
  const std::int64_t src_size = tokens(split);
  if (src_size < static_cast<std::int64_t>(T) + 1)
    throw ConfigError("sequence length " + std::to_string(T) + " is longer than the " +
                      (split == Split::train ? std::string("training") : std::string("validation")) + " split of '" +
                      path_ + "' allows");
  if (kind == ModelKind::bert && masking_.mask_id < 0)
    throw ConfigError("--data: the tokenizer of the model has no [MASK] token for masked-LM training");
  BatchData out;
  out.B = B;
  out.T = T;
  const auto n = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  out.input_ids.resize(n);
  out.targets.resize(n);
  out.attention_mask.assign(n, 1);
  const std::uint64_t split_tag = split == Split::train ? 1 : 2;
  if (ids_.empty())
    fill(kind, bytes_.data() + begin, src_size, seed ^ (split_tag << 62), step, first, B, T, out);
  else
    fill(kind, ids_.data() + begin, src_size, seed ^ (split_tag << 62), step, first, B, T, out);
  return out;
}

// Window b of the batch at an offset drawn from mix_seed(seed, step, first + b);
// GPT: next-token targets; BERT: masked (masked_lm.h).
template <typename Token>
void TextDataset::fill(ModelKind kind, const Token* src, std::int64_t src_size, std::uint64_t seed, std::int64_t step,
                       std::int64_t first, int B, int T, BatchData& out) const {
  std::vector<std::int32_t> tokens(kind == ModelKind::gpt ? 0 : static_cast<std::size_t>(T));  // BERT's window, widened
  const auto windows = static_cast<std::uint64_t>(src_size) - static_cast<std::uint64_t>(T);
  for (int b = 0; b < B; ++b) {
    Rng rng(mix_seed(seed, static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(first + b)));
    const Token* window = src + rng.below(windows);
    std::int32_t* ids = out.input_ids.data() + static_cast<std::size_t>(b) * T;
    std::int32_t* tgt = out.targets.data() + static_cast<std::size_t>(b) * T;
    if (kind == ModelKind::gpt) {
      for (int t = 0; t < T; ++t) {
        ids[t] = window[t];
        tgt[t] = window[t + 1];
      }
    } else {
      tokens.assign(window, window + T);
      mask_tokens(tokens.data(), ids, tgt, T, rng, masking_);
    }
  }
}

}  // namespace shardscope
