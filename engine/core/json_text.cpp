// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/json_text.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace shardscope {

namespace {

using nlohmann::json;

// nlohmann's DOM builder, with errors recorded instead of thrown, a depth
// limit, and a key repeated within one object refused (nlohmann would keep the
// last value silently; DeepSpeed's loader and safetensors refuse it too).
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  BoundedDomParser(json& document, int max_depth) : json_sax_dom_parser(document, false), max_depth_(max_depth) {}

  bool start_object(std::size_t elements) {
    object_keys_.emplace_back();
    return deeper() && json_sax_dom_parser::start_object(elements);
  }
  bool start_array(std::size_t elements) { return deeper() && json_sax_dom_parser::start_array(elements); }
  bool end_object() {
    object_keys_.pop_back();
    --depth_;
    return json_sax_dom_parser::end_object();
  }
  bool end_array() {
    --depth_;
    return json_sax_dom_parser::end_array();
  }
  bool key(std::string& name) {
    last_key_ = bounded_excerpt(name, 60);
    ++keys_;
    if (!object_keys_.back().insert(name).second) {
      repeated_key_ = keys_;
      return false;
    }
    return json_sax_dom_parser::key(name);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& error) {
    failed_ = true;
    position_ = position;
    token_ = last_token;
    message_ = error.what();
    out_of_range_ = error.id == 406;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  bool failed() const { return failed_; }
  std::size_t position() const { return position_; }
  const std::string& token() const { return token_; }
  const std::string& message() const { return message_; }
  bool out_of_range() const { return out_of_range_; }
  std::size_t repeated_key() const { return repeated_key_; }  // 1-based count of the key that repeats; 0: none
  const std::string& last_key() const { return last_key_; }

 private:
  bool deeper() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }
  int max_depth_, depth_ = 0;
  bool too_deep_ = false, failed_ = false, out_of_range_ = false;
  std::size_t position_ = 0;
  std::string token_, message_, last_key_;
  std::vector<std::unordered_set<std::string>> object_keys_;  // of each open object, innermost last
  std::size_t keys_ = 0, repeated_key_ = 0;
};

// The offset of the opening quote of the n-th key (1-based) of a text that is
// valid JSON up to it: a key is a string followed by a colon.
std::size_t offset_of_key(std::string_view text, std::size_t n) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    const std::size_t begin = i;
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
    std::size_t next = i + 1;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t' || text[next] == '\n' || text[next] == '\r'))
      ++next;
    if (next < text.size() && text[next] == ':' && ++seen == n) return begin;
  }
  return text.size();
}

// The offset of the bracket that opens level max_depth + 1 (strings skipped).
std::size_t offset_past_depth(std::string_view text, int max_depth) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

// "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..." -> "syntax error ...".
std::string syntax_reason(const std::string& what) {
  std::string text = what;
  if (const auto close = text.find("] "); text.rfind("[json.exception", 0) == 0 && close != std::string::npos)
    text = text.substr(close + 2);
  if (text.rfind("parse error at line ", 0) == 0) {
    if (const auto colon = text.find(": "); colon != std::string::npos) text = text.substr(colon + 2);
  } else if (text.rfind("parse error: ", 0) == 0) {
    text = text.substr(13);
  }
  return bounded_excerpt(text, 200);
}

void locate(std::string_view text, std::size_t byte, JsonTextError& error) {
  error.byte = std::min(byte, text.size());
  error.line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < error.byte; ++i)
    if (text[i] == '\n') ++error.line, line_start = i + 1;
  error.column = static_cast<int>(error.byte - line_start) + 1;
}

// The length of the printable UTF-8 character at text[i] (RFC 3629's table
// of well-formed sequences), or 0 where a byte must be escaped: a control
// character (C0, DEL, C1), a stray or overlong byte, a sequence cut short.
std::size_t printable_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  const unsigned lead = byte(i);
  if (lead < 0x80) return lead >= 0x20 && lead != 0x7F ? 1 : 0;
  std::size_t length = 0;
  unsigned low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    if (lead == 0xC2) low = 0xA0;  // U+0080 to U+009F: the C1 controls
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return length;
}

}  // namespace

std::string JsonTextError::where_and_why() const {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + reason;
}

std::optional<json> parse_json_text(std::string_view text, JsonTextError& error, int max_depth) {
  json root;
  BoundedDomParser parser(root, max_depth);
  if (json::sax_parse(text, &parser) && !parser.too_deep() && !parser.failed() && parser.repeated_key() == 0)
    return root;
  if (parser.repeated_key() != 0) {
    locate(text, offset_of_key(text, parser.repeated_key()), error);
    error.reason = "key '" + parser.last_key() + "' appears twice in one object";
  } else if (parser.too_deep()) {
    locate(text, offset_past_depth(text, max_depth), error);
    error.reason = "values nest deeper than " + std::to_string(max_depth) + " levels";
  } else if (parser.out_of_range()) {  // the lexer has read the whole number
    const std::size_t length = std::min(parser.token().size(), parser.position());
    locate(text, parser.position() - length, error);
    error.reason = (parser.last_key().empty() ? "" : "key '" + parser.last_key() + "': ") + "the number " +
                   bounded_excerpt(parser.token(), 40) + " is beyond the range of a double (about ±1.8e308)";
  } else {  // the position is just past the character that did not fit
    locate(text, parser.position() > 0 ? parser.position() - 1 : 0, error);
    error.reason = syntax_reason(parser.message());
  }
  return std::nullopt;
}

std::string bounded_excerpt(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = printable_length(text, i);
    std::string piece;
    if (length > 0) {
      piece = text.substr(i, length);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto byte = static_cast<unsigned char>(text[i]);
      piece = {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
      length = 1;
    }
    if (out.size() + piece.size() > limit) return out + "...";
    out += piece;
    i += length;
  }
  return out;
}

std::string json_value_summary(const json& value) {
  const auto count = [](std::size_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return value.get<bool>() ? "boolean true" : "boolean false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number " + value.dump();  // a scalar: short, no recursion
    case json::value_t::string:
      return "string " + json(bounded_excerpt(value.get_ref<const std::string&>()))
                             .dump(-1, ' ', false, json::error_handler_t::replace);
    case json::value_t::array:
      return "array of " + count(value.size(), "element");
    case json::value_t::object:
      return "object of " + count(value.size(), "key");
    default:
      return value.type_name();
  }
}

}  // namespace shardscope
