// SPDX-License-Identifier: GPL-3.0-or-later
// The default tokenizer: one token per UTF-8 byte (ids 0..255), so any text in
// any language works with no vocabulary file. Four special tokens follow the
// bytes for BERT-style training.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

struct ByteTokenizer {
  static constexpr std::int32_t kPad = 256;
  static constexpr std::int32_t kMask = 257;
  static constexpr std::int32_t kCls = 258;
  static constexpr std::int32_t kSep = 259;
  static constexpr std::int32_t kVocabSize = 260;

  static std::vector<std::int32_t> encode(std::string_view text) {
    std::vector<std::int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }

  // Special tokens are dropped; invalid UTF-8 is passed through as bytes.
  static std::string decode(const std::vector<std::int32_t>& ids) {
    std::string text;
    for (std::int32_t id : ids)
      if (id >= 0 && id < 256) text.push_back(static_cast<char>(id));
    return text;
  }
};

}  // namespace shardscope
