// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/bpe_tokenizer.h"

#include <queue>

#include "data/unicode_text.h"

namespace shardscope {

char32_t byte_to_unicode(unsigned char byte) {
  const auto printable = [](unsigned b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
  if (printable(byte)) return byte;
  // The others, in byte order, from U+0100 on (GPT-2's encoder.py).
  char32_t next = 0x100;
  for (unsigned b = 0; b < byte; ++b)
    if (!printable(b)) ++next;
  return next;
}

int unicode_to_byte(char32_t c) {
  static const std::array<int, 0x144> table = [] {
    std::array<int, 0x144> t{};
    t.fill(-1);
    for (unsigned b = 0; b < 256; ++b) t[byte_to_unicode(static_cast<unsigned char>(b))] = static_cast<int>(b);
    return t;
  }();
  return c < table.size() ? table[c] : -1;
}

std::string bytes_to_token_text(std::string_view bytes) {
  std::string text;
  for (char b : bytes) unicode::append_utf8(byte_to_unicode(static_cast<unsigned char>(b)), text);
  return text;
}

namespace {

enum class Kind { letter, number, space, other };

Kind kind_of(char32_t c) {
  const std::uint8_t bits = unicode::char_class(c);
  if (bits & unicode::kLetter) return Kind::letter;
  if (bits & unicode::kNumber) return Kind::number;
  if (bits & unicode::kRegexSpace) return Kind::space;
  return Kind::other;
}

// The length of a contraction ('s 't 'm 'd 're 've 'll) at `at`, or 0.
std::size_t contraction_at(std::u32string_view text, std::size_t at) {
  if (text[at] != U'\'' || at + 1 >= text.size()) return 0;
  const char32_t a = text[at + 1];
  if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
  if (at + 2 >= text.size()) return 0;
  const char32_t b = text[at + 2];
  return (a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l') ? 3 : 0;
}

}  // namespace

// The regex's alternatives in order, as the regex engine tries them at each start.
std::vector<std::pair<std::size_t, std::size_t>> split_gpt2_pieces(std::u32string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  const std::size_t n = text.size();
  std::size_t at = 0;
  while (at < n) {
    std::size_t end = at + contraction_at(text, at);
    if (end == at) {
      // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional ' ', then a run of one kind.
      const std::size_t run = text[at] == U' ' && at + 1 < n && kind_of(text[at + 1]) != Kind::space ? at + 1 : at;
      const Kind kind = kind_of(text[run]);
      if (kind != Kind::space) {
        for (end = run + 1; end < n && kind_of(text[end]) == kind;) ++end;
      } else {
        // "\s+(?!\S)": whitespace up to the end, or all but its last character before
        // a non-space (which then starts the next piece, e.g. " word"); else "\s+".
        for (end = at; end < n && kind_of(text[end]) == Kind::space;) ++end;
        if (end < n && end - at >= 2) --end;
      }
    }
    pieces.emplace_back(at, end);
    at = end;
  }
  return pieces;
}

BpeTokenizer::BpeTokenizer(TokenizerCommon common, const std::vector<BpeMerge>& merges, BpeOptions options)
    : VocabTokenizer(std::move(common)), options_(options) {
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMerge& m = merges[rank];
    // A repeated pair keeps its last rank, as the library's merge map does.
    merges_[(std::uint64_t{static_cast<std::uint32_t>(m.left)} << 32) | static_cast<std::uint32_t>(m.right)] = {
        static_cast<std::int32_t>(rank), m.merged};
  }
  for (unsigned b = 0; b < 256; ++b)
    byte_ids_[b] = vocab_id(bytes_to_token_text(std::string(1, static_cast<char>(b)))).value_or(-1);
  if (!unk_token().empty()) unk_id_ = vocab_id(unk_token()).value_or(-1);
  index_added_tokens();
}

void BpeTokenizer::encode_text(std::u32string_view text, std::vector<std::int32_t>& ids) const {
  std::u32string prefixed;
  if (options_.add_prefix_space && !text.starts_with(U' ')) {
    prefixed = U" ";
    prefixed.append(text);
    text = prefixed;
  }
  if (!options_.use_regex) return encode_piece(unicode::encode_utf8(text), ids);
  for (const auto& [begin, end] : split_gpt2_pieces(text))
    encode_piece(unicode::encode_utf8(text.substr(begin, end - begin)), ids);
}

namespace {

struct Symbol {
  std::int32_t id;
  std::size_t bytes;  // 0 once merged into its left neighbour
  std::ptrdiff_t prev, next;
};

// A candidate merge of the symbol at `pos` with its right neighbour.
struct Candidate {
  std::int32_t rank;
  std::size_t pos;
  std::int32_t merged;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void BpeTokenizer::encode_piece(std::string_view bytes, std::vector<std::int32_t>& ids) const {
  if (options_.ignore_merges)
    if (const auto id = vocab_id(bytes_to_token_text(bytes))) return ids.push_back(*id);
  // One symbol per byte; bytes without a vocabulary character become unk_token (or are dropped without one).
  std::vector<Symbol> symbols;
  std::size_t pending_unk = 0;
  const auto add = [&](std::int32_t id, std::size_t n) {
    const auto index = static_cast<std::ptrdiff_t>(symbols.size());
    symbols.push_back({id, n, index - 1, index + 1});
  };
  for (char c : bytes) {
    const std::int32_t id = byte_ids_[static_cast<unsigned char>(c)];
    if (id >= 0) {
      if (pending_unk > 0) add(unk_id_, pending_unk), pending_unk = 0;
      add(id, 1);
    } else if (unk_id_ >= 0) {
      if (pending_unk > 0 && !options_.fuse_unk) add(unk_id_, pending_unk), pending_unk = 0;
      ++pending_unk;
    }
  }
  if (pending_unk > 0) add(unk_id_, pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  const auto merge_of = [&](std::int32_t left, std::int32_t right) {
    const auto it =
        merges_.find((std::uint64_t{static_cast<std::uint32_t>(left)} << 32) | static_cast<std::uint32_t>(right));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const auto* m = merge_of(symbols[i].id, symbols[i + 1].id)) queue.push({m->first, i, m->second});
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.bytes == 0 || left.next < 0) continue;  // merged away, or now the last symbol
    Symbol& right = symbols[static_cast<std::size_t>(left.next)];
    const auto* m = merge_of(left.id, right.id);
    if (m == nullptr || m->second != top.merged) continue;  // stale: a neighbour changed since it was queued
    left.id = top.merged;
    left.bytes += right.bytes;
    right.bytes = 0;
    left.next = right.next;
    if (left.next >= 0) symbols[static_cast<std::size_t>(left.next)].prev = static_cast<std::ptrdiff_t>(top.pos);
    if (left.prev >= 0) {
      const auto prev = static_cast<std::size_t>(left.prev);
      if (const auto* pm = merge_of(symbols[prev].id, left.id)) queue.push({pm->first, prev, pm->second});
    }
    if (left.next >= 0)
      if (const auto* nm = merge_of(left.id, symbols[static_cast<std::size_t>(left.next)].id))
        queue.push({nm->first, top.pos, nm->second});
  }
  for (const Symbol& s : symbols)
    if (s.bytes > 0) ids.push_back(s.id);
}

// The ByteLevel decoder: each token's characters back to bytes (a token with a
// character that stands for no byte, e.g. an added token, as its own UTF-8),
// then the bytes as UTF-8 with U+FFFD for what is not valid.
std::string BpeTokenizer::decode_tokens(const std::vector<std::string>& tokens) const {
  std::string bytes;
  for (const std::string& token : tokens) {
    std::string token_bytes;
    bool all_bytes = true;
    for (char32_t c : unicode::decode_utf8(token, source() + ": token")) {
      const int b = unicode_to_byte(c);
      if (b < 0) {
        all_bytes = false;
        break;
      }
      token_bytes.push_back(static_cast<char>(b));
    }
    bytes += all_bytes ? token_bytes : token;
  }
  return unicode::utf8_lossy(bytes);
}

}  // namespace shardscope
