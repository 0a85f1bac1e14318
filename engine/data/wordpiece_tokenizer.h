// SPDX-License-Identifier: GPL-3.0-or-later
// BERT's WordPiece (Devlin et al. 2019; Wu et al. 2016, section 4.1), as the
// Hugging Face tokenizers library runs it:
//   1. BertNormalizer: clean_text (drop control characters, whitespace to ' '),
//      handle_chinese_chars (spaces around each CJK ideograph), strip_accents
//      (NFD, then no non-spacing marks), lowercase; each per code point;
//   2. BertPreTokenizer: split on whitespace, and every punctuation character alone;
//   3. each word greedily, longest vocabulary match first, the pieces after the
//      first written with the continuing prefix "##" ("playing" -> play ##ing); a
//      word with a piece not in the vocabulary, or longer than
//      max_input_chars_per_word characters, is the one token [UNK].
#pragma once

#include "data/vocab_tokenizer.h"

namespace shardscope {

struct WordPieceOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // the library's null means "as lowercase"
  bool lowercase = true;
  bool normalize = true;  // false: the tokenizer.json has no normalizer at all
  std::string continuing_subword_prefix = "##";
  std::size_t max_input_chars_per_word = 100;
  bool decode_cleanup = true;  // the decoder's cleanup: "word ." -> "word.", " ' s" ...
};

class WordPieceTokenizer final : public VocabTokenizer {
 public:
  // common.unk_token must be in the vocabulary (the reader checks).
  WordPieceTokenizer(TokenizerCommon common, WordPieceOptions options);
  std::string_view kind() const override { return "wordpiece"; }

 protected:
  std::u32string normalize(std::u32string_view text) const override;
  void encode_text(std::u32string_view text, std::vector<std::int32_t>& ids) const override;
  std::string decode_tokens(const std::vector<std::string>& tokens) const override;

 private:
  void encode_word(std::u32string_view word, std::vector<std::int32_t>& ids) const;

  WordPieceOptions options_;
  std::int32_t unk_id_ = -1;
};

}  // namespace shardscope
