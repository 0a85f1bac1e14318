// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2's byte-level BPE (Radford et al. 2019, "Language Models are
// Unsupervised Multitask Learners", section 2.2), as the Hugging Face
// tokenizers library runs it:
//   1. pre-tokenize with GPT-2's regex
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (letters, numbers and whitespace of every script: unicode_text.h);
//   2. write each piece's UTF-8 bytes as printable characters (bytes_to_unicode:
//      byte 0x20 ' ' is 'Ġ'), one symbol per byte;
//   3. merge adjacent symbols, always the pair of lowest merge rank first
//      (leftmost among equals), until no pair has a merge.
// Decoding maps the characters back to bytes, so any text round-trips.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/vocab_tokenizer.h"

namespace shardscope {

struct BpeOptions {
  bool add_prefix_space = false;  // a ' ' before text that starts without one (GPT-2: false)
  bool use_regex = true;          // pre-tokenize with the regex (else the whole stretch is one piece)
  bool ignore_merges = false;     // a piece that is a vocabulary token is taken whole
  bool fuse_unk = false;          // consecutive unknown characters become one unk_token
};

// One merge rule, by vocabulary ids; its rank is its place in the list.
struct BpeMerge {
  std::int32_t left, right, merged;
};

class BpeTokenizer final : public VocabTokenizer {
 public:
  // `merges` in rank order, checked by the reader (all three tokens in the vocabulary).
  BpeTokenizer(TokenizerCommon common, const std::vector<BpeMerge>& merges, BpeOptions options);
  std::string_view kind() const override { return "bpe"; }

 protected:
  void encode_text(std::u32string_view text, std::vector<std::int32_t>& ids) const override;
  std::string decode_tokens(const std::vector<std::string>& tokens) const override;

 private:
  void encode_piece(std::string_view bytes, std::vector<std::int32_t>& ids) const;

  BpeOptions options_;
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, std::int32_t>> merges_;  // (left, right) -> (rank, merged)
  std::array<std::int32_t, 256> byte_ids_{};  // the id of each byte's character, -1 if not in the vocabulary
  std::int32_t unk_id_ = -1;
};

// GPT-2's bytes_to_unicode: the printable character that stands for a byte
// ('!'..'~', '¡'..'¬', '®'..'ÿ' for themselves; the others from U+0100 on).
char32_t byte_to_unicode(unsigned char byte);
// The byte a character stands for, or -1 if it stands for none.
int unicode_to_byte(char32_t c);
// A token's text from bytes: "Ġthe" for " the".
std::string bytes_to_token_text(std::string_view bytes);

// GPT-2's regex split of `text`: [begin, end) of each piece.
std::vector<std::pair<std::size_t, std::size_t>> split_gpt2_pieces(std::u32string_view text);

}  // namespace shardscope
