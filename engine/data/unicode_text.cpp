// SPDX-License-Identifier: GPL-3.0-or-later
#include "data/unicode_text.h"

#include <algorithm>

#include "core/error.h"
#include "data/unicode_tables.h"

namespace shardscope::unicode {

namespace tables = unicode_tables;

std::uint8_t char_class(char32_t c) {
  if (c > 0x10FFFF) return 0;
  const tables::ClassRange* end = tables::kClassRanges + tables::kClassRangeCount;
  // The last range whose first is <= c (the table starts at 0).
  const auto* after = std::upper_bound(tables::kClassRanges, end, c,
                                       [](char32_t value, const tables::ClassRange& r) { return value < r.first; });
  return (after - 1)->bits;
}

bool is_cjk_ideograph(char32_t c) {
  // BertNormalizer's ranges (tokenizers/src/normalizers/bert.rs), which the table script checks.
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

namespace {

// The multi-code-point mapping of `c`, or null.
const tables::MultiMapping* find_multi(const tables::MultiMapping* rows, std::size_t count, char32_t c) {
  const auto* end = rows + count;
  const auto* it = std::lower_bound(rows, end, c, [](const tables::MultiMapping& r, char32_t v) { return r.from < v; });
  return it != end && it->from == c ? it : nullptr;
}

void append_multi(const tables::MultiMapping& m, std::u32string& out) {
  for (char32_t t : m.to)
    if (t != 0) out.push_back(t);
}

// Hangul syllable decomposition (Unicode 3.12): S = L V [T].
constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;

}  // namespace

void append_lowercase(char32_t c, std::u32string& out) {
  if (c < 0x80) {  // the common case
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  if (const auto* m = find_multi(tables::kLowercaseMulti, tables::kLowercaseMultiCount, c))
    return append_multi(*m, out);
  const auto* end = tables::kLowercaseRuns + tables::kLowercaseRunCount;
  const auto* after = std::upper_bound(tables::kLowercaseRuns, end, c,
                                       [](char32_t v, const tables::MappingRun& r) { return v < r.first; });
  if (after != tables::kLowercaseRuns) {
    const tables::MappingRun& run = *(after - 1);
    const char32_t offset = c - run.first;
    if (offset % run.stride == 0 && offset / run.stride < run.count) {
      out.push_back(static_cast<char32_t>(static_cast<std::int64_t>(c) + run.delta));
      return;
    }
  }
  out.push_back(c);
}

void append_without_accents(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c);
    return;
  }
  if (has_class(c, kAccentMark)) return;
  if (c >= kHangulFirst && c <= kHangulLast) {
    const char32_t s = c - kHangulFirst;
    out.push_back(0x1100 + s / 588);
    out.push_back(0x1161 + (s % 588) / 28);
    if (s % 28 != 0) out.push_back(0x11A7 + s % 28);
    return;
  }
  const auto* end = tables::kStripAccentPairs + tables::kStripAccentPairCount;
  const auto* it = std::lower_bound(tables::kStripAccentPairs, end, c,
                                    [](const tables::CodePointPair& p, char32_t v) { return p.from < v; });
  if (it != end && it->from == c) {
    out.push_back(it->to);
    return;
  }
  if (const auto* m = find_multi(tables::kStripAccentMulti, tables::kStripAccentMultiCount, c))
    return append_multi(*m, out);
  out.push_back(c);
}

namespace {

// How many continuation bytes follow `lead`, and the range of the first one
// (Unicode table 3-7: no overlong forms, surrogates or code points past U+10FFFF); -1 for no lead byte.
int continuation_bytes(unsigned char lead, unsigned char& low, unsigned char& high) {
  low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) return 1;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    return 2;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
    return 3;
  }
  return -1;
}

}  // namespace

std::u32string decode_utf8(std::string_view text, std::string_view what) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      out.push_back(lead);
      ++i;
      continue;
    }
    const auto refuse = [&](const char* why) {
      throw ConfigError(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(i) + why);
    };
    unsigned char low = 0, high = 0;
    const int extra = continuation_bytes(lead, low, high);
    if (extra < 0) refuse("");
    if (static_cast<std::size_t>(extra) > text.size() - i - 1) refuse(" (a sequence cut short)");
    char32_t c = lead & (0x7F >> (extra + 1));
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) refuse("");
      c = (c << 6) | (next & 0x3F);
    }
    out.push_back(c);
    i += 1 + static_cast<std::size_t>(extra);
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) append_utf8(c, out);
  return out;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    unsigned char low = 0, high = 0;
    const int extra = continuation_bytes(lead, low, high);
    std::size_t good = 1;  // bytes of the sequence that fit so far
    for (int k = 1; k <= extra && i + good < bytes.size(); ++k, ++good) {
      const auto next = static_cast<unsigned char>(bytes[i + good]);
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) break;
    }
    if (extra > 0 && good == static_cast<std::size_t>(extra) + 1) {
      out.append(bytes.substr(i, good));
    } else {
      append_utf8(0xFFFD, out);  // the maximal part that could have begun a character
    }
    i += good;
  }
  return out;
}

}  // namespace shardscope::unicode
