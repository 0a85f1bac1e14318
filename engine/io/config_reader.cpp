// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/config_reader.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace shardscope {

namespace {
std::string type_name(const nlohmann::json& v) {
  return v.is_null() ? "null" : std::string(v.type_name());
}

// nlohmann's message is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
std::string parse_error_text(const std::string& what) {
  std::string text = what;
  if (const auto close = text.find("] "); text.rfind("[json.exception", 0) == 0 && close != std::string::npos)
    text = text.substr(close + 2);
  if (text.rfind("parse error at ", 0) == 0) text = text.substr(15);
  return text;
}
}  // namespace

std::string read_config_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(std::string(what) + ": cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

JsonConfig::JsonConfig(std::string text, std::string source) : text_(std::move(text)), source_(std::move(source)) {
  try {
    root_ = nlohmann::json::parse(text_);
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(source_ + ": " + parse_error_text(e.what()) + " (is this a JSON file?)");
  }
  if (!root_.is_object())
    throw FormatError(source_ + ": the top level must be a JSON object {...}, not " + type_name(root_));
}

std::string JsonConfig::dotted(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& key : path) out += (out.empty() ? "" : ".") + key;
  return out;
}

int JsonConfig::line_of(const std::vector<std::string>& path) const {
  std::size_t pos = 0;
  for (const auto& key : path) {
    const std::string quoted = "\"" + key + "\"";
    for (;;) {
      pos = text_.find(quoted, pos);
      if (pos == std::string::npos) return 0;
      std::size_t after = pos + quoted.size();
      while (after < text_.size() &&
             (text_[after] == ' ' || text_[after] == '\t' || text_[after] == '\r' || text_[after] == '\n'))
        ++after;
      pos += quoted.size();
      if (after < text_.size() && text_[after] == ':') break;  // a key, not a string value
    }
  }
  int line = 1;
  for (std::size_t i = 0; i < pos && i < text_.size(); ++i) line += text_[i] == '\n' ? 1 : 0;
  return line;
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
  std::int64_t value = 0;
  if (v->is_number_integer()) {
    value = v->get<std::int64_t>();
  } else if (v->is_number_float() &&
             v->get<double>() == static_cast<double>(static_cast<std::int64_t>(v->get<double>()))) {
    value = static_cast<std::int64_t>(v->get<double>());  // 5e8 is written as a float in many configs
  } else {
    fail(path, "expected an integer, got " + type_name(*v) + " " + v->dump());
  }
  if (value < min || value > max)
    fail(path, std::to_string(value) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return value;
}

std::optional<double> JsonConfig::get_number(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr || is_auto(path)) return std::nullopt;
  if (!v->is_number()) fail(path, "expected a number, got " + type_name(*v) + " " + v->dump());
  return v->get<double>();
}

std::optional<bool> JsonConfig::get_bool(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr || is_auto(path)) return std::nullopt;
  if (!v->is_boolean()) fail(path, "expected true or false, got " + type_name(*v) + " " + v->dump());
  return v->get<bool>();
}

std::optional<std::string> JsonConfig::get_string(const std::vector<std::string>& path) const {
  const nlohmann::json* v = find(path);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) fail(path, "expected a string, got " + type_name(*v) + " " + v->dump());
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
