// SPDX-License-Identifier: GPL-3.0-or-later
// Finding added tokens ([MASK], <|endoftext|>) in a text, as the Hugging Face
// tokenizers library's AddedVocabulary does: leftmost-longest matches, a
// single_word token only where no word character touches it, lstrip / rstrip
// taking the whitespace beside it along. The text between matches goes on to
// the normalizer and the model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace shardscope {

class AddedTokenMatcher {
 public:
  // `pattern` is the token's text as it is matched (normalized for a normalized token).
  void add(std::u32string pattern, const AddedToken& token);
  bool empty() const { return patterns_.empty(); }

  // A stretch [begin, end) of the text: an added token's id, or -1 for plain text.
  struct Piece {
    std::size_t begin, end;
    std::int32_t id;
  };
  std::vector<Piece> split(std::u32string_view text) const;

 private:
  struct Pattern {
    std::u32string text;
    AddedToken token;
  };
  // The longest pattern matching at `at` (index into patterns_), or -1.
  int longest_match(std::u32string_view text, std::size_t at) const;

  std::vector<Pattern> patterns_;
  std::unordered_map<char32_t, std::vector<int>> by_first_;  // first code point -> patterns, longest first
};

}  // namespace shardscope
