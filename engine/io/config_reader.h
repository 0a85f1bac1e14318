// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the config importers (Hugging Face config.json, DeepSpeed JSON):
// a JSON file read whole, whose errors name the file, the key path and its
// line. Syntax errors are FormatError ("line 3, column 5: ..."); a value of
// the wrong type or range is ConfigError ("ds.json line 7: zero_optimization.stage:
// expected 0, 1, 2 or 3, got 4"). Keys the importer does not know are
// collected as warnings, never dropped in silence.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

// The whole file as text; ConfigError naming `what` and the path if it cannot be
// read, is not a regular file (a directory, a FIFO, a device) or is empty (core/input_file.h).
std::string read_config_file(const std::string& path, std::string_view what);

class JsonConfig {
 public:
  // Parses `text`; FormatError "<source>: line L, column C: <reason>" on a syntax error,
  // a number beyond a double's range, nesting deeper than kMaxJsonDepth (core/json_text.h),
  // and when the top level is not an object.
  JsonConfig(std::string text, std::string source);

  const nlohmann::json& root() const { return root_; }
  const std::string& source() const { return source_; }

  // 1-based line of the key at `path` (e.g. {"zero_optimization", "stage"}), from an
  // index of every key's line built once (so a warning per key stays linear); 0 if not found.
  int line_of(const std::vector<std::string>& path) const;
  // "<source> line 7: zero_optimization.stage" (without the line when unknown).
  std::string where(const std::vector<std::string>& path) const;
  [[noreturn]] void fail(const std::vector<std::string>& path, const std::string& message) const;

  // The value at `path` (null pointer when absent or JSON null).
  const nlohmann::json* find(const std::vector<std::string>& path) const;
  // Typed reads: absent -> nullopt; wrong type or out of range -> ConfigError naming the key and line
  // (and the value's type, never the whole value).
  std::optional<std::int64_t> get_int(const std::vector<std::string>& path, std::int64_t min, std::int64_t max) const;
  std::optional<double> get_number(const std::vector<std::string>& path) const;
  std::optional<bool> get_bool(const std::vector<std::string>& path) const;
  std::optional<std::string> get_string(const std::vector<std::string>& path) const;
  // "auto" (the value the HF Trainer fills in) counts as absent; `is_auto` reports it.
  bool is_auto(const std::vector<std::string>& path) const;

  // Adds "<source> line L: unknown key 'a.b' (<hint>); ignored" to `warnings` for
  // every key of the object at `path` (the root for {}) that is not in `known`.
  void report_unknown_keys(const std::vector<std::string>& path, const std::set<std::string, std::less<>>& known,
                           const std::string& hint, std::vector<std::string>& warnings) const;

  static std::string dotted(const std::vector<std::string>& path);

 private:
  void index_key_lines();

  std::string text_;
  std::string source_;
  nlohmann::json root_;
  // Every key of the text as a node of a tree: (parent node, key) -> node; node 0 is the top level.
  std::map<std::pair<int, std::string>, int, std::less<>> key_nodes_;
  std::vector<int> key_lines_;  // [node] the line of the key
};

}  // namespace shardscope
