// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/wordpiece_tokenizer.h"

#include "data/unicode_text.h"

namespace shardscope {

WordPieceTokenizer::WordPieceTokenizer(TokenizerCommon common, WordPieceOptions options)
    : VocabTokenizer(std::move(common)), options_(std::move(options)) {
  unk_id_ = vocab_id(unk_token()).value_or(-1);
  index_added_tokens();
}

std::u32string WordPieceTokenizer::normalize(std::u32string_view text) const {
  if (!options_.normalize) return std::u32string(text);
  std::u32string out;
  out.reserve(text.size());
  std::u32string stripped;
  for (char32_t c : text) {
    const std::uint8_t bits = unicode::char_class(c);
    if (options_.clean_text) {
      if (bits & unicode::kBertControl) continue;
      if (bits & unicode::kCleanToSpace) c = U' ';
    }
    const bool chinese = options_.handle_chinese_chars && unicode::is_cjk_ideograph(c);
    if (chinese) out.push_back(U' ');
    stripped.clear();
    if (options_.strip_accents)
      unicode::append_without_accents(c, stripped);
    else
      stripped.push_back(c);
    for (char32_t s : stripped) {
      if (options_.lowercase)
        unicode::append_lowercase(s, out);
      else
        out.push_back(s);
    }
    if (chinese) out.push_back(U' ');
  }
  return out;
}

void WordPieceTokenizer::encode_text(std::u32string_view text, std::vector<std::int32_t>& ids) const {
  std::size_t word_begin = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const std::uint8_t bits = i < text.size() ? unicode::char_class(text[i]) : std::uint8_t{unicode::kBertWhitespace};
    if ((bits & (unicode::kBertWhitespace | unicode::kBertPunctuation)) == 0) continue;
    if (word_begin < i) encode_word(text.substr(word_begin, i - word_begin), ids);
    if (bits & unicode::kBertPunctuation) encode_word(text.substr(i, 1), ids);
    word_begin = i + 1;
  }
}

void WordPieceTokenizer::encode_word(std::u32string_view word, std::vector<std::int32_t>& ids) const {
  if (word.size() > options_.max_input_chars_per_word) return ids.push_back(unk_id_);
  const std::size_t before = ids.size();
  std::string piece;
  for (std::size_t start = 0; start < word.size();) {
    // The longest piece from `start` that the vocabulary has.
    std::size_t end = word.size();
    std::optional<std::int32_t> id;
    for (; end > start; --end) {
      piece = start > 0 ? options_.continuing_subword_prefix : std::string();
      piece += unicode::encode_utf8(word.substr(start, end - start));
      if ((id = vocab_id(piece))) break;
    }
    if (!id) {
      ids.resize(before);
      return ids.push_back(unk_id_);
    }
    ids.push_back(*id);
    start = end;
  }
}

namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// The WordPiece decoder's cleanup (tokenizers/src/decoders/wordpiece.rs), in its order.
void cleanup(std::string& token) {
  static const std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(token, from, to);
}

}  // namespace

// Pieces after the first join their word without the "##"; other tokens are
// preceded by a space.
std::string WordPieceTokenizer::decode_tokens(const std::vector<std::string>& tokens) const {
  std::string text;
  const std::string& prefix = options_.continuing_subword_prefix;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string token;
    if (i == 0)
      token = tokens[i];
    else if (!prefix.empty() && tokens[i].starts_with(prefix))
      token = tokens[i].substr(prefix.size());
    else
      token = " " + tokens[i];
    if (options_.decode_cleanup) cleanup(token);
    text += token;
  }
  return text;
}

}  // namespace shardscope
