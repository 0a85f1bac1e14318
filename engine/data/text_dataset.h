// SPDX-License-Identifier: GPL-3.0-or-later
// A text file as a stream of byte tokens, split into training (first 90%) and
// validation (last 10%) parts. Samples are windows at random offsets, drawn
// from a stream seeded by (seed, step, sample index): the global batch of a
// step is the same whatever rank or layout draws it.
// One token is one byte (ByteTokenizer), so the dataset keeps the file's bytes
// as they are: its memory is the file's size, read once, with no other copy
// (a batch widens its own windows to int32 ids). A pretrained model's tokenizer
// (--init-from) gives ids instead, kept as int32.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/masked_lm.h"
#include "data/tokenizer.h"
#include "model/model_config.h"

namespace shardscope {

enum class Split { train, validation };

// Token ids of a batch, row-major (B, T), ready for Model::forward.
struct BatchData {
  int B = 0, T = 0;
  std::vector<std::int32_t> input_ids;
  std::vector<std::int32_t> targets;         // -1 = not scored
  std::vector<std::int32_t> attention_mask;  // all 1 (windows have no padding)
};

class TextDataset {
 public:
  // Throws ConfigError naming the file if it is missing, unreadable, too large
  // for this machine's memory, or too short to give `min_window` tokens in each split.
  // With `tokenizer` (a pretrained model's, --init-from), the text is kept as its
  // ids instead (4 bytes a token; ConfigError naming the byte of invalid UTF-8),
  // and BERT's masking uses its [MASK] and draws random tokens from its vocabulary.
  TextDataset(const std::string& path, int min_window, const Tokenizer* tokenizer = nullptr);

  // Builds from text in memory (the shipped corpus, tests).
  static TextDataset from_text(std::string_view text, int min_window, const std::string& name = "<text>",
                               const Tokenizer* tokenizer = nullptr);

  std::int64_t tokens(Split split) const;
  const std::string& path() const { return path_; }
  // The token ids as they are stored (bytes, or int32 ids): what a checkpoint
  // fingerprints, so that a resume on other text of the same length is refused.
  std::string_view stored_tokens() const {
    return ids_.empty() ? std::string_view(reinterpret_cast<const char*>(bytes_.data()), bytes_.size())
                        : std::string_view(reinterpret_cast<const char*>(ids_.data()), ids_.size() * 4);
  }
  // What a token is: "bytes", or the tokenizer's ("wordpiece tokens", "bpe tokens").
  const std::string& token_kind() const { return token_kind_; }

  // Samples [first, first + B) of `step` for the model kind: GPT gets next-token
  // targets; BERT gets MLM-masked inputs (masked_lm.h).
  BatchData batch(ModelKind kind, Split split, std::uint64_t seed, std::int64_t step, std::int64_t first, int B,
                  int T) const;

 private:
  TextDataset() = default;
  void split(int min_window);  // sets train_end_, checking both splits hold a window
  void tokenize(const Tokenizer& tokenizer);  // bytes_ -> ids_
  std::int64_t size() const { return ids_.empty() ? static_cast<std::int64_t>(bytes_.size()) : static_cast<std::int64_t>(ids_.size()); }
  template <typename Token>
  void fill(ModelKind kind, const Token* src, std::int64_t src_size, std::uint64_t seed, std::int64_t step,
            std::int64_t first, int B, int T, BatchData& out) const;

  std::string path_;
  std::vector<std::uint8_t> bytes_;  // the text: token ids 0..255, one per byte
  std::vector<std::int32_t> ids_;    // or its ids from a tokenizer (bytes_ then empty)
  std::string token_kind_ = "bytes";
  MaskedLmOptions masking_;
  std::int64_t train_end_ = 0;       // tokens [0, train_end_) train, the rest validation
};

}  // namespace shardscope
