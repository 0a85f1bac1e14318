// SPDX-License-Identifier: GPL-3.0-or-later
// The little of Unicode the GPT-2 and BERT tokenizers need: UTF-8 to code
// points and back, each code point's classes (letter, number, whitespace,
// punctuation, control, accent mark as the Hugging Face tokenizers library
// sees them) and BERT's per-character lowercase and strip-accents mappings.
// The tables are generated from that library by tests/tools/make_unicode_tables.py
// (unicode_class_table.cpp, unicode_mapping_tables.cpp), so the ids match its
// ids, Unicode version included.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::unicode {

enum CharClass : std::uint8_t {
  kLetter = 1,            // \p{L} of the GPT-2 pre-tokenizer regex
  kNumber = 2,            // \p{N} of that regex
  kRegexSpace = 4,        // \s of that regex
  kBertWhitespace = 8,    // BertPreTokenizer splits here and drops it
  kBertPunctuation = 16,  // BertPreTokenizer isolates it (ASCII punctuation or Unicode P*)
  kBertControl = 32,      // BertNormalizer's clean_text removes it (NUL, U+FFFD, C* but tab/newline/CR)
  kCleanToSpace = 64,     // clean_text turns it into ' ' (whitespace)
  kAccentMark = 128,      // strip_accents removes it (Mn, a non-spacing mark)
};

// The CharClass bits of `c` (0 past U+10FFFF).
std::uint8_t char_class(char32_t c);
inline bool has_class(char32_t c, CharClass bit) {
  return (char_class(c) & bit) != 0;
}

// BERT's "Chinese character" (CJK Unified Ideographs and their extensions and
// compatibility blocks): handle_chinese_chars puts spaces around each.
bool is_cjk_ideograph(char32_t c);

// Appends the lowercase of `c` (one or two code points; Rust's char::to_lowercase).
void append_lowercase(char32_t c, std::u32string& out);
// Appends `c` without its accents: its canonical decomposition (NFD) less the
// non-spacing marks; nothing for a mark itself; Hangul syllables to their jamo.
void append_without_accents(char32_t c, std::u32string& out);

// `text` as code points. Invalid UTF-8 (a stray continuation byte, a sequence
// cut short, an overlong form, a surrogate, past U+10FFFF) throws ConfigError
// "<what>: invalid UTF-8 at byte N".
std::u32string decode_utf8(std::string_view text, std::string_view what);
void append_utf8(char32_t c, std::string& out);
std::string encode_utf8(std::u32string_view text);
// `bytes` as UTF-8, each maximal invalid part replaced by U+FFFD (as Rust's String::from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

}  // namespace shardscope::unicode
