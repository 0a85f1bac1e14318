// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/vocab_tokenizer.h"

#include <algorithm>
#include <initializer_list>

#include "data/unicode_text.h"

namespace shardscope {

VocabTokenizer::VocabTokenizer(TokenizerCommon common) : common_(std::move(common)) {
  ids_.reserve(common_.vocab.size());
  for (std::size_t id = 0; id < common_.vocab.size(); ++id)
    ids_.emplace(common_.vocab[id], static_cast<std::int32_t>(id));
  vocab_size_ = static_cast<std::int32_t>(common_.vocab.size());
  for (std::size_t i = 0; i < common_.added.size(); ++i) {
    added_by_id_[common_.added[i].id] = i;
    vocab_size_ = std::max(vocab_size_, common_.added[i].id + 1);
  }
  // The well-known special tokens, by the names BERT, GPT-2 and RoBERTa give them.
  const auto first_of = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view name : names)
      if (const auto id = token_id(name)) return *id;
    return std::int32_t{-1};
  };
  special_.unk = common_.unk_token.empty() ? first_of({"[UNK]", "<unk>"}) : first_of({common_.unk_token});
  special_.pad = first_of({"[PAD]", "<pad>"});
  special_.cls = first_of({"[CLS]", "<s>"});
  special_.sep = first_of({"[SEP]", "</s>"});
  special_.mask = first_of({"[MASK]", "<mask>"});
  special_.bos = first_of({"<s>", "<|endoftext|>"});
  special_.eos = first_of({"</s>", "<|endoftext|>"});
}

// A normalized token is matched, and named (token_text, decode), by its
// normalized text, as the tokenizers library does ("Yes!" is "yes!" when lowercasing).
void VocabTokenizer::index_added_tokens() {
  for (AddedToken& token : common_.added) {
    const std::u32string content = unicode::decode_utf8(token.content, common_.source + ": added token");
    if (token.normalized) {
      std::u32string normalized = normalize(content);
      token.content = unicode::encode_utf8(normalized);
      normalized_matcher_.add(std::move(normalized), token);
    } else {
      raw_matcher_.add(content, token);
    }
  }
}

std::optional<std::int32_t> VocabTokenizer::vocab_id(std::string_view token) const {
  const auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::int32_t> VocabTokenizer::token_id(std::string_view token) const {
  for (const AddedToken& added : common_.added)
    if (added.content == token) return added.id;
  return vocab_id(token);
}

std::optional<std::string> VocabTokenizer::token_text(std::int32_t id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return common_.added[it->second].content;
  if (id >= 0 && static_cast<std::size_t>(id) < common_.vocab.size())
    return common_.vocab[static_cast<std::size_t>(id)];
  return std::nullopt;
}

// Steps 3 and 4 of the order above, for one normalized stretch.
void VocabTokenizer::encode_normalized(std::u32string_view text, std::vector<std::int32_t>& ids) const {
  if (normalized_matcher_.empty()) return encode_text(text, ids);
  for (const auto& piece : normalized_matcher_.split(text)) {
    if (piece.id >= 0)
      ids.push_back(piece.id);
    else
      encode_text(text.substr(piece.begin, piece.end - piece.begin), ids);
  }
}

std::vector<std::int32_t> VocabTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::u32string code_points = unicode::decode_utf8(text, "the text to tokenize");
  std::vector<std::int32_t> ids;
  if (add_special_tokens) ids = common_.prefix_ids;
  for (const auto& piece : raw_matcher_.split(code_points)) {
    if (piece.id >= 0)
      ids.push_back(piece.id);
    else
      encode_normalized(normalize(std::u32string_view(code_points).substr(piece.begin, piece.end - piece.begin)), ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), common_.suffix_ids.begin(), common_.suffix_ids.end());
  return ids;
}

std::string VocabTokenizer::decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::int32_t id : ids) {
    if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) {
      if (!(skip_special_tokens && common_.added[it->second].special))
        tokens.push_back(common_.added[it->second].content);
    } else if (id >= 0 && static_cast<std::size_t>(id) < common_.vocab.size()) {
      tokens.push_back(common_.vocab[static_cast<std::size_t>(id)]);
    }
  }
  return decode_tokens(tokens);
}

}  // namespace shardscope
