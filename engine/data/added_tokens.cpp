// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/added_tokens.h"

#include <algorithm>

#include "data/unicode_text.h"

namespace shardscope {

namespace {

bool is_word_char(char32_t c) {
  return c == U'_' || (unicode::char_class(c) & (unicode::kLetter | unicode::kNumber)) != 0;
}

bool is_space(char32_t c) {
  return unicode::has_class(c, unicode::kBertWhitespace);  // Rust's char::is_whitespace
}

}  // namespace

void AddedTokenMatcher::add(std::u32string pattern, const AddedToken& token) {
  if (pattern.empty()) return;  // an empty pattern would match everywhere; the library skips it too
  const int index = static_cast<int>(patterns_.size());
  patterns_.push_back({std::move(pattern), token});
  auto& list = by_first_[patterns_.back().text[0]];
  list.push_back(index);
  std::stable_sort(list.begin(), list.end(),
                   [&](int a, int b) { return patterns_[a].text.size() > patterns_[b].text.size(); });
}

int AddedTokenMatcher::longest_match(std::u32string_view text, std::size_t at) const {
  const auto it = by_first_.find(text[at]);
  if (it == by_first_.end()) return -1;
  for (int index : it->second)
    if (text.substr(at).starts_with(patterns_[static_cast<std::size_t>(index)].text)) return index;
  return -1;
}

std::vector<AddedTokenMatcher::Piece> AddedTokenMatcher::split(std::u32string_view text) const {
  std::vector<Piece> pieces;
  std::size_t text_begin = 0;  // where the plain text before the next match starts
  std::size_t at = 0;
  while (at < text.size()) {
    const int index = patterns_.empty() ? -1 : longest_match(text, at);
    if (index < 0) {
      ++at;
      continue;
    }
    const Pattern& p = patterns_[static_cast<std::size_t>(index)];
    std::size_t begin = at, end = at + p.text.size();
    at = end;  // a refused single-word match stays plain text, and the search goes on after it
    if (p.token.single_word &&
        ((begin > 0 && is_word_char(text[begin - 1])) || (end < text.size() && is_word_char(text[end]))))
      continue;
    if (p.token.lstrip)
      while (begin > text_begin && is_space(text[begin - 1])) --begin;
    if (p.token.rstrip)
      while (end < text.size() && is_space(text[end])) ++end;
    if (text_begin < begin) pieces.push_back({text_begin, begin, -1});
    pieces.push_back({begin, end, p.token.id});
    text_begin = at = end;
  }
  if (text_begin < text.size()) pieces.push_back({text_begin, text.size(), -1});
  return pieces;
}

}  // namespace shardscope
