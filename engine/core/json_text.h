// SPDX-License-Identifier: GPL-3.0-or-later
// JSON the user gives the program (config files, a recording's metadata),
// parsed so that every way it can be wrong is reported with its place: a
// syntax error, a number beyond a double's range (1e400, which nlohmann
// reports as an out_of_range exception with no position), a key repeated in
// one object (nlohmann would keep the last value silently), and nesting deeper
// than kMaxJsonDepth. nlohmann's parser is iterative, but copying, comparing
// or dumping a value recurses once per level: the depth limit keeps every
// later use of the document within the stack.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope {

// No config or metadata nests near this deep; [[[[...]]]] 60,000 levels deep is an attack or damage.
inline constexpr int kMaxJsonDepth = 512;

// Where and why a JSON text was refused.
struct JsonTextError {
  std::size_t byte = 0;  // 0-based offset into the text
  int line = 1;          // 1-based, at that offset
  int column = 1;        // 1-based, in bytes
  std::string reason;    // e.g. "syntax error while parsing object key - ...", short and bounded
  // "line 3, column 5: <reason>"
  std::string where_and_why() const;
};

// The document, or nullopt with `error` filled in.
std::optional<nlohmann::json> parse_json_text(std::string_view text, JsonTextError& error,
                                              int max_depth = kMaxJsonDepth);

// A value named for a message without printing it whole (dump() of a deep
// value overflows the stack; of a large one floods the terminal): its type,
// and for a scalar a short excerpt, e.g. string "abc", array of 3 elements, number 1.5.
std::string json_value_summary(const nlohmann::json& value);

// `text` as a message may quote it: every byte that is not printable UTF-8 (a
// control character, NUL, a byte of an invalid sequence) written as \xNN, and
// cut to at most `limit` bytes (never inside a character or an escape), with
// "..." when cut. A damaged file's bytes never reach the terminal raw.
std::string bounded_excerpt(std::string_view text, std::size_t limit = 60);

}  // namespace shardscope
