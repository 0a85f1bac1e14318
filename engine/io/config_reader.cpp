// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/config_reader.h"

#include <cmath>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"

namespace shardscope {

namespace {
std::string type_name(const nlohmann::json& v) {
  return v.is_null() ? "null" : std::string(v.type_name());
}

// A key as nlohmann stores it: the text between the quotes, escapes decoded.
std::string decoded_key(std::string_view raw) {
  if (raw.find('\\') == std::string_view::npos) return std::string(raw);
  JsonTextError ignored;
  std::string quoted = "\"";
  quoted.append(raw).append("\"");
  const auto key = parse_json_text(quoted, ignored);
  return key && key->is_string() ? key->get<std::string>() : std::string(raw);
}
}  // namespace

std::string read_config_file(const std::string& path, std::string_view what) {
  return read_input_file(path, what);
}

JsonConfig::JsonConfig(std::string text, std::string source) : text_(std::move(text)), source_(std::move(source)) {
  JsonTextError error;
  std::optional<nlohmann::json> root = parse_json_text(text_, error);
  if (!root) {
    const bool syntax = error.reason.rfind("syntax error", 0) == 0;
    throw FormatError(source_ + ": " + error.where_and_why() + (syntax ? " (is this a JSON file?)" : ""));
  }
  root_ = std::move(*root);
  if (!root_.is_object())
    throw FormatError(source_ + ": the top level must be a JSON object {...}, not " + type_name(root_));
  index_key_lines();
}

std::string JsonConfig::dotted(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& key : path) {
    if (!out.empty()) out += '.';
    out += bounded_excerpt(key);  // appended in steps: GCC 12 warns falsely (-Wrestrict) on "." + std::string
  }
  return out;
}

// One pass over the (valid) text: a stack of the open objects and arrays, and
// for an object whether a key comes next. Arrays pass their parent's node on,
// so {"a": [{"b": 1}]} indexes a.b.
void JsonConfig::index_key_lines() {
  struct Open {
    bool object;
    int node;          // the key (path) this object or array is the value of
    bool expect_key;   // in an object: the next string is a key
    int last_key = 0;  // in an object: the node of its last key
  };
  std::vector<Open> open;
  key_lines_.assign(1, 0);
  int line = 1;
  for (std::size_t i = 0; i < text_.size(); ++i) {
    const char c = text_[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      const std::size_t begin = i + 1;
      for (++i; i < text_.size() && text_[i] != '"'; ++i)
        if (text_[i] == '\\') ++i;
      if (open.empty() || !open.back().object || !open.back().expect_key) continue;
      const std::string key = decoded_key(std::string_view(text_).substr(begin, i - begin));
      const auto [it, added] = key_nodes_.try_emplace({open.back().node, key}, static_cast<int>(key_lines_.size()));
      if (added) key_lines_.push_back(line);  // parse_json_text refuses a repeated key
      open.back().last_key = it->second;
      open.back().expect_key = false;
    } else if (c == '{' || c == '[') {
      const int node = open.empty() ? 0 : open.back().object ? open.back().last_key : open.back().node;
      open.push_back({c == '{', node, c == '{'});
    } else if (c == '}' || c == ']') {
      if (!open.empty()) open.pop_back();
    } else if (c == ',' && !open.empty() && open.back().object) {
      open.back().expect_key = true;
    }
  }
}

int JsonConfig::line_of(const std::vector<std::string>& path) const {
  int node = 0;
  for (const auto& key : path) {
    const auto it = key_nodes_.find(std::make_pair(node, key));
    if (it == key_nodes_.end()) return 0;
    node = it->second;
  }
  return key_lines_[static_cast<std::size_t>(node)];
}

std::string JsonConfig::where(const std::vector<std::string>& path) const {
  const int line = line_of(path);
  return source_ + (line > 0 ? " line " + std::to_string(line) : std::string()) + ": " + dotted(path);
}

void JsonConfig::fail(const std::vector<std::string>& path, const std::string& message) const {
  throw ConfigError(where(path) + ": " + message);
}

const nlohmann::json* JsonConfig::find(const std::vector<std::string>& path) const {
  const nlohmann::json* node = &root_;
  for (const auto& key : path) {
    if (!node->is_object()) return nullptr;
    const auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node->is_null() ? nullptr : node;
}

bool JsonConfig::is_auto(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  return v != nullptr && v->is_string() && v->get<std::string>() == "auto";
}

std::optional<std::int64_t> JsonConfig::get_int(const std::vector<std::string>& path, std::int64_t min,
                                                std::int64_t max) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr || is_auto(path)) return std::nullopt;
  const std::string range = " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    fail(path, std::to_string(v->get<std::uint64_t>()) + range);  // before it could wrap to a negative int64
  if (v->is_number_integer()) {
    const std::int64_t value = v->get<std::int64_t>();
    if (value < min || value > max) fail(path, std::to_string(value) + range);
    return value;
  }
  if (!v->is_number_float()) fail(path, "expected an integer, got " + json_value_summary(*v));
  // 5e8 is written as a float in many configs: whole and within the range, it is that integer.
  const double number = v->get<double>();
  if (number != std::trunc(number)) fail(path, "expected an integer, got " + json_value_summary(*v));
  if (number < static_cast<double>(min) || number > static_cast<double>(max) || number >= 0x1p63)
    fail(path, v->dump() + range);
  return static_cast<std::int64_t>(number);
}

std::optional<double> JsonConfig::get_number(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr || is_auto(path)) return std::nullopt;
  if (!v->is_number()) fail(path, "expected a number, got " + json_value_summary(*v));
  return v->get<double>();
}

std::optional<bool> JsonConfig::get_bool(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr || is_auto(path)) return std::nullopt;
  if (!v->is_boolean()) fail(path, "expected true or false, got " + json_value_summary(*v));
  return v->get<bool>();
}

std::optional<std::string> JsonConfig::get_string(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) fail(path, "expected a string, got " + json_value_summary(*v));
  return v->get<std::string>();
}

void JsonConfig::report_unknown_keys(const std::vector<std::string>& path,
                                     const std::set<std::string, std::less<>>& known, const std::string& hint,
                                     std::vector<std::string>& warnings) const {
  const nlohmann::json* object = path.empty() ? &root_ : find(path);
  if (object == nullptr) return;
  if (!object->is_object()) fail(path, "expected an object {...}, got " + type_name(*object));
  for (const auto& [key, value] : object->items()) {
    if (known.count(key) != 0) continue;
    std::vector<std::string> full = path;
    full.push_back(key);
    warnings.push_back(where(full) + ": unknown key (" + hint + "); ignored");
  }
}

}  // namespace shardscope
