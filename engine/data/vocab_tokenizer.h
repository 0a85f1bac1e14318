// SPDX-License-Identifier: GPL-3.0-or-later
// What BPE and WordPiece share: the vocabulary (token <-> id), the added
// tokens, and the order of encoding, as in the Hugging Face tokenizers library:
//   1. added tokens not marked `normalized` are found in the text as given;
//   2. each stretch between them is normalized (WordPiece: BertNormalizer);
//   3. added tokens marked `normalized` are found in the normalized text;
//   4. the rest is pre-tokenized and split into subwords (the subclass's encode_text);
//   5. the post-processor's tokens go around the ids ([CLS] ... [SEP]).
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "data/added_tokens.h"
#include "data/tokenizer.h"

namespace shardscope {

// What the readers (tokenizer_json.cpp, tokenizer_files.cpp) hand every tokenizer.
struct TokenizerCommon {
  std::string source;                    // the file(s) read, for messages
  std::vector<std::string> vocab;        // the model's tokens by id: ids 0..n-1, each once
  std::vector<AddedToken> added;         // ids may lie past the vocabulary
  std::vector<std::int32_t> prefix_ids;  // the post-processor's tokens before the text ([CLS])
  std::vector<std::int32_t> suffix_ids;  // ... and after it ([SEP])
  std::string unk_token;                 // the model's unknown token ("" if none)
};

struct TransparentStringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, std::int32_t, TransparentStringHash, std::equal_to<>>;

class VocabTokenizer : public Tokenizer {
 public:
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens = true) const override;
  std::int32_t vocab_size() const override { return vocab_size_; }
  std::optional<std::string> token_text(std::int32_t id) const override;
  std::optional<std::int32_t> token_id(std::string_view token) const override;
  const std::vector<AddedToken>& added_tokens() const override { return common_.added; }
  const SpecialTokenIds& special_ids() const override { return special_; }
  const std::string& source() const override { return common_.source; }

 protected:
  explicit VocabTokenizer(TokenizerCommon common);
  // The subclass calls this at the end of its constructor, once normalize() works.
  void index_added_tokens();

  virtual std::u32string normalize(std::u32string_view text) const { return std::u32string(text); }
  // Pre-tokenizes one stretch of normalized text and appends its subwords' ids.
  virtual void encode_text(std::u32string_view text, std::vector<std::int32_t>& ids) const = 0;
  // Joins the tokens of decode (added tokens as their content) into text.
  virtual std::string decode_tokens(const std::vector<std::string>& tokens) const = 0;

  // The model vocabulary only (not the added tokens).
  std::optional<std::int32_t> vocab_id(std::string_view token) const;
  const std::vector<std::string>& vocab() const { return common_.vocab; }
  const std::string& unk_token() const { return common_.unk_token; }

 private:
  void encode_normalized(std::u32string_view text, std::vector<std::int32_t>& ids) const;

  TokenizerCommon common_;
  TokenIds ids_;                                               // the model vocabulary
  std::unordered_map<std::int32_t, std::size_t> added_by_id_;  // id -> index into common_.added
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  SpecialTokenIds special_;
  std::int32_t vocab_size_ = 0;
};

}  // namespace shardscope
