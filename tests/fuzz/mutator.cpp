// SPDX-License-Identifier: GPL-3.0-or-later
#include "mutator.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <stdexcept>

namespace shardscope::fuzz {

namespace {

// Numbers past every range a parser checks: past double (1e400), past int64
// (2^63), past uint64 (2^64), past int32 and uint32, negative zero, NaN.
// clang-format off
constexpr std::string_view kNumbers[] = {
    "1e400", "-1e400", "1e-400", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "4294967295", "4294967296",
    "4294967297", "2147483647", "2147483648", "-2147483649", "0", "-1", "-0", "0.5", "1e18", "1e19", "NaN",
    "Infinity", "1e308", "4.9e-324", "100000000000000000000000000000000000000000", "65536", "1099511627776",
    "-1e308", "0x10"};

// JSON and YAML values and syntax: every type where a number is expected,
// escapes that are not text, YAML anchors, tags and documents.
constexpr std::string_view kValues[] = {
    "null", "true", "false", "\"\"", "\"auto\"", "[]", "{}", "\"\\u0000\"", "\"\\ud800\"", "[1,2]", "{\"a\":1}",
    "{", "}", "[", "]", ",", ":", "\"", "\\", "\n", "\t", "#", "- ", ": ", "&a ", "*a", "!!binary ", "<<: *a",
    "\n---\n", "\n...\n", "%YAML 1.2\n", "? ", "|\n", "~"};

// Little-endian integers for the length and count fields of binary headers.
constexpr std::uint64_t kIntegers[] = {
    0, 1, 2, 0x7f, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
    0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull};
// clang-format on

bool is_number_char(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The end of the JSON or YAML value that starts at `begin`: its matching
// bracket or quote when it opens one, else the next separator.
std::size_t value_end(const std::string& data, std::size_t begin) {
  if (begin >= data.size()) return data.size();
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = begin; i < data.size(); ++i) {
    const char c = data[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      if (!in_string && depth == 0) return i + 1;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[')
      ++depth;
    else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      if (--depth == 0) return i + 1;
    } else if (depth == 0 && (c == ',' || c == '\n')) {
      return i;
    }
  }
  return data.size();
}

// The first position at or after `from` that starts a value: after ':' , ',' or '['.
std::size_t value_start(const std::string& data, std::size_t from) {
  for (std::size_t i = from; i < data.size(); ++i) {
    if (data[i] != ':' && data[i] != '[' && data[i] != ',') continue;
    std::size_t j = i + 1;
    while (j < data.size() && (data[j] == ' ' || data[j] == '\t')) ++j;
    return j;
  }
  return data.size();
}

}  // namespace

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Mutator::Mutator(std::uint64_t seed, std::vector<std::string> dictionary, LengthPrefixedJson length_field,
                 std::size_t max_size)
    : rng_(seed), tokens_(std::move(dictionary)), length_field_(length_field), max_size_(max_size) {
  for (auto v : kValues) tokens_.emplace_back(v);
  for (auto n : kNumbers) tokens_.emplace_back(n);
}

void Mutator::learn_tokens(std::string_view seed) {
  // Quoted strings ("zero_optimization") and YAML keys (`mixed_precision:`).
  for (std::size_t i = 0; i < seed.size(); ++i) {
    if (seed[i] == '"') {
      const std::size_t end = seed.find('"', i + 1);
      if (end == std::string_view::npos) break;
      if (end - i <= 48) tokens_.emplace_back(seed.substr(i, end - i + 1));
      i = end;
    } else if (seed[i] == ':' && i > 0 && std::isalnum(static_cast<unsigned char>(seed[i - 1]))) {
      std::size_t begin = i;
      while (begin > 0 && (std::isalnum(static_cast<unsigned char>(seed[begin - 1])) || seed[begin - 1] == '_'))
        --begin;
      if (i - begin <= 48) tokens_.emplace_back(seed.substr(begin, i - begin + 1));
    }
  }
  std::sort(tokens_.begin(), tokens_.end());
  tokens_.erase(std::unique(tokens_.begin(), tokens_.end()), tokens_.end());
}

void Mutator::hold_back(std::string_view kinds) {
  while (!kinds.empty()) {
    const std::size_t comma = kinds.find(',');
    const std::string_view kind = kinds.substr(0, comma);
    if (kind == "overflowing_numbers")
      overflowing_numbers_ = false;
    else if (kind == "deep_nesting")
      deep_nesting_ = false;
    else if (kind == "many_keys")
      many_keys_ = false;
    else if (!kind.empty())
      throw std::invalid_argument("unknown mutation kind " + std::string(kind));
    kinds = comma == std::string_view::npos ? std::string_view{} : kinds.substr(comma + 1);
  }
  if (!overflowing_numbers_) std::erase_if(tokens_, [](const std::string& t) { return t == "1e400" || t == "-1e400"; });
}

std::string Mutator::mutate(const std::string& input, const std::vector<std::string>& pool) {
  std::string data = input;
  const std::size_t count = 1 + rng_.below(4);
  for (std::size_t i = 0; i < count; ++i) mutate_once(data, pool);
  if (length_field_.length_bytes != 0 && rng_.one_in(2)) fix_length_field(data);
  if (data.size() > max_size_) data.resize(max_size_);
  return data;
}

void Mutator::mutate_once(std::string& data, const std::vector<std::string>& pool) {
  switch (rng_.below(15)) {
    case 0:
      return flip_bit(data);
    case 1:
      return set_byte(data);
    case 2:
      return insert_bytes(data);
    case 3:
      return erase_range(data);
    case 4:
      return duplicate_range(data);
    case 5:
      return splice(data, pool);
    case 6:
      return truncate(data);
    case 7:
      return insert_token(data);
    case 8:
      return replace_number(data);
    case 9:
      return replace_string(data);
    case 10:
      return nest_value(data);
    case 11:
      return repeat_entry(data);
    case 12:
      return insert_key(data);
    case 13:
      return insert_brackets(data);
    default:
      return overwrite_integer(data);
  }
}

std::string_view Mutator::token() {
  return tokens_[rng_.below(tokens_.size())];
}

void Mutator::flip_bit(std::string& data) {
  if (data.empty()) return;
  data[rng_.below(data.size())] ^= static_cast<char>(1u << rng_.below(8));
}

void Mutator::set_byte(std::string& data) {
  if (data.empty()) return;
  static constexpr char kByteList[] = "\0\x01\x7f\x80\xff\"{}[]:,\n\\ -0123456789e.";
  constexpr std::string_view kBytes{kByteList, sizeof kByteList - 1};
  data[rng_.below(data.size())] = rng_.one_in(2) ? kBytes[rng_.below(kBytes.size())] : static_cast<char>(rng_.next());
}

void Mutator::insert_bytes(std::string& data) {
  const std::size_t at = rng_.below(data.size() + 1);
  std::string bytes(1 + rng_.below(8), '\0');
  for (char& c : bytes) c = static_cast<char>(rng_.next());
  data.insert(at, bytes);
}

void Mutator::erase_range(std::string& data) {
  if (data.empty()) return;
  const std::size_t at = rng_.below(data.size());
  data.erase(at, 1 + rng_.below(rng_.one_in(4) ? data.size() : 16));
}

void Mutator::duplicate_range(std::string& data) {
  if (data.empty()) return;
  const std::size_t from = rng_.below(data.size());
  const std::string chunk = data.substr(from, 1 + rng_.below(64));
  data.insert(rng_.below(data.size() + 1), chunk);
}

void Mutator::splice(std::string& data, const std::vector<std::string>& pool) {
  if (pool.empty()) return;
  const std::string& other = pool[rng_.below(pool.size())];
  data = data.substr(0, rng_.below(data.size() + 1)) + other.substr(rng_.below(other.size() + 1));
}

void Mutator::truncate(std::string& data) {
  data.resize(rng_.below(data.size() + 1));
}

void Mutator::insert_token(std::string& data) {
  data.insert(rng_.below(data.size() + 1), token());
}

void Mutator::replace_number(std::string& data) {
  // A digit at a random place, widened to the whole number around it.
  std::size_t at = data.find_first_of("0123456789", rng_.below(data.size() + 1));
  if (at == std::string::npos) at = data.find_first_of("0123456789");
  if (at == std::string::npos) return insert_token(data);
  std::size_t begin = at, end = at;
  while (begin > 0 && is_number_char(data[begin - 1])) --begin;
  while (end < data.size() && is_number_char(data[end])) ++end;
  std::string_view number = kNumbers[rng_.below(std::size(kNumbers))];
  if (!overflowing_numbers_ && (number == "1e400" || number == "-1e400")) number = "1e308";
  data.replace(begin, end - begin, number);
}

void Mutator::replace_string(std::string& data) {
  const std::size_t begin = data.find('"', rng_.below(data.size() + 1));
  if (begin == std::string::npos) return insert_token(data);
  const std::size_t end = data.find('"', begin + 1);
  if (end == std::string::npos) return;
  data.replace(begin, end - begin + 1, token());
}

// Wraps a value in `depth` arrays or objects: [[[[...value...]]]] or
// {"a":{"a":...}} (a stack-depth test: the program must refuse it, not recurse).
void Mutator::nest_value(std::string& data) {
  constexpr std::array<std::size_t, 6> kDepths = {2, 64, 1000, 10000, 60000, 100000};
  const std::size_t depth = std::min<std::size_t>(kDepths[rng_.below(kDepths.size())], deep_nesting_ ? SIZE_MAX : 256);
  const std::size_t begin = value_start(data, rng_.below(data.size() + 1));
  const std::size_t end = std::max(begin, value_end(data, begin));
  const bool objects = rng_.one_in(3);
  const std::string_view open = objects ? "{\"a\":" : "[";
  const std::string_view close = objects ? "}" : "]";
  std::string wrapped;
  wrapped.reserve(data.size() + depth * (open.size() + close.size()));
  wrapped.append(data, 0, begin);
  for (std::size_t i = 0; i < depth; ++i) wrapped.append(open);
  wrapped.append(data, begin, end - begin);
  for (std::size_t i = 0; i < depth; ++i) wrapped.append(close);
  wrapped.append(data, end);
  data = std::move(wrapped);
}

// Key/value pairs (or YAML lines) added by the thousand, each key new: a
// file of 20,000 unknown keys must not take quadratic time.
void Mutator::repeat_entry(std::string& data) {
  const std::size_t begin = value_start(data, rng_.below(data.size() + 1));
  const std::size_t end = value_end(data, begin);
  const bool json = data.find('{') != std::string::npos;
  const std::string value = end > begin ? data.substr(begin, end - begin) : "1";
  const std::size_t copies = std::min(1 + rng_.below(many_keys_ ? 20000 : 100), max_size_ / (value.size() + 16));
  std::string repeated;
  repeated.reserve(copies * (value.size() + 16));
  for (std::size_t i = 0; i < copies; ++i) {  // "k17":value, or k17: value
    repeated.append(json ? "\"k" : "k").append(std::to_string(i)).append(json ? "\":" : ": ");
    repeated.append(value).append(json ? "," : "\n");
  }
  const std::size_t brace = data.find('{');
  data.insert(brace == std::string::npos ? 0 : brace + 1, repeated);
}

// A key, known or not, with a value: JSON after a '{', YAML at a line start.
void Mutator::insert_key(std::string& data) {
  std::string key(token());
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
  if (!key.empty() && key.back() == ':') key.pop_back();
  const std::string value(token());
  const std::size_t brace = data.find('{', rng_.below(data.size() + 1));
  if (brace != std::string::npos) {
    data.insert(brace + 1, "\"" + key + "\":" + value + ",");
    return;
  }
  const std::size_t line = data.find('\n', rng_.below(data.size() + 1));
  data.insert(line == std::string::npos ? 0 : line + 1, key + ": " + value + "\n");
}

void Mutator::insert_brackets(std::string& data) {
  constexpr std::string_view kBrackets = "{}[]\"";
  std::string run(1 + rng_.below(rng_.one_in(8) ? (deep_nesting_ ? 5000 : 256) : 8), '[');
  const char c = kBrackets[rng_.below(kBrackets.size())];
  for (char& b : run) b = rng_.one_in(4) ? kBrackets[rng_.below(kBrackets.size())] : c;
  data.insert(rng_.below(data.size() + 1), run);
}

// A little-endian 4- or 8-byte integer written over the data: the length and
// count fields of binary formats (and, in text, a burst of odd bytes).
void Mutator::overwrite_integer(std::string& data) {
  const std::size_t width = rng_.one_in(2) ? 4 : 8;
  if (data.size() < width) return insert_bytes(data);
  std::uint64_t value = kIntegers[rng_.below(std::size(kIntegers))];
  if (rng_.one_in(4)) value = data.size() + rng_.below(5) - 2;  // just around the file's size
  // Header fields first: they sit at the start of binary formats.
  const std::size_t span = rng_.one_in(2) ? std::min<std::size_t>(32, data.size()) : data.size();
  const std::size_t at = std::min(rng_.below(span - width + 1) & ~std::size_t{3}, data.size() - width);
  for (std::size_t i = 0; i < width; ++i) data[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// Sets the length field to the length of the JSON that follows it: up to the
// bracket that closes the first one (strings and escapes skipped).
void Mutator::fix_length_field(std::string& data) const {
  const LengthPrefixedJson& f = length_field_;
  if (data.size() < f.length_offset + f.length_bytes || data.size() <= f.json_offset) return;
  const std::size_t end = value_end(data, f.json_offset);
  const std::uint64_t length = end - f.json_offset;
  for (std::size_t i = 0; i < f.length_bytes; ++i)
    data[f.length_offset + i] = static_cast<char>((length >> (8 * i)) & 0xff);
}

}  // namespace shardscope::fuzz
