// SPDX-License-Identifier: GPL-3.0-or-later
// The generated Unicode tables (unicode_class_table.cpp, unicode_mapping_tables.cpp,
// written by tests/tools/make_unicode_tables.py); read them through unicode_text.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardscope::unicode_tables {

struct ClassRange {
  char32_t first;     // the range runs to the next range's first
  std::uint8_t bits;  // CharClass bits (unicode_text.h)
};
struct MappingRun {
  char32_t first;
  std::uint32_t count;  // code points first, first + stride, ... (count of them)
  std::uint32_t stride;
  std::int32_t delta;  // each maps to itself + delta
};
struct CodePointPair {
  char32_t from, to;
};
struct MultiMapping {
  char32_t from;
  char32_t to[3];  // 0 ends it early
};

extern const ClassRange kClassRanges[];
extern const std::size_t kClassRangeCount;
extern const MappingRun kLowercaseRuns[];
extern const std::size_t kLowercaseRunCount;
extern const MultiMapping kLowercaseMulti[];
extern const std::size_t kLowercaseMultiCount;
extern const CodePointPair kStripAccentPairs[];
extern const std::size_t kStripAccentPairCount;
extern const MultiMapping kStripAccentMulti[];
extern const std::size_t kStripAccentMultiCount;

}  // namespace shardscope::unicode_tables
