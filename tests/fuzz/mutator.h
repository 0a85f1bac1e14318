// SPDX-License-Identifier: GPL-3.0-or-later
// The fuzzer's mutations: deterministic (one seed gives one sequence of
// inputs), blind (no coverage feedback; GCC has no libFuzzer), and aimed at
// what breaks parsers: bit flips, inserted and deleted bytes, splices of two
// seeds, truncation, brackets duplicated or nested thousands deep, numbers
// outside every range (1e400, 2^63, 2^64), unknown keys, one key repeated
// thousands of times, and, for binary formats, their length fields rewritten.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::fuzz {

// splitmix64: small, fast, and the same sequence on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  bool one_in(std::size_t n) { return below(n) == 0; }

 private:
  std::uint64_t state_;
};

// A length field in front of a JSON text (the recording's metadata length at
// byte 16, the safetensors header length at byte 0): after a mutation it is
// set, half of the time, to the JSON's new length, so that mutations of the
// JSON reach the parser behind the length check.
struct LengthPrefixedJson {
  std::size_t length_offset = 0;
  std::size_t length_bytes = 0;  // 4 or 8, little-endian; 0: the format has none
  std::size_t json_offset = 0;
};

class Mutator {
 public:
  // `dictionary`: keys and values of the format (they are inserted, and
  // replace strings); the seeds' own quoted strings and YAML keys are added.
  Mutator(std::uint64_t seed, std::vector<std::string> dictionary, LengthPrefixedJson length_field,
          std::size_t max_size);

  void learn_tokens(std::string_view seed);
  // Kinds of mutation held back while a known bug they find is being fixed
  // elsewhere: "overflowing_numbers" (1e400), "deep_nesting" (over 256 levels),
  // "many_keys" (over 100 added keys). std::invalid_argument for another name.
  void hold_back(std::string_view kinds);
  // One to four mutations of `input`; `pool` (the corpus) gives splice partners.
  std::string mutate(const std::string& input, const std::vector<std::string>& pool);
  Rng& rng() { return rng_; }

 private:
  void mutate_once(std::string& data, const std::vector<std::string>& pool);
  std::string_view token();
  void flip_bit(std::string& data);
  void set_byte(std::string& data);
  void insert_bytes(std::string& data);
  void erase_range(std::string& data);
  void duplicate_range(std::string& data);
  void splice(std::string& data, const std::vector<std::string>& pool);
  void truncate(std::string& data);
  void insert_token(std::string& data);
  void replace_number(std::string& data);
  void replace_string(std::string& data);
  void nest_value(std::string& data);
  void repeat_entry(std::string& data);
  void insert_key(std::string& data);
  void insert_brackets(std::string& data);
  void overwrite_integer(std::string& data);
  void fix_length_field(std::string& data) const;

  Rng rng_;
  std::vector<std::string> tokens_;
  LengthPrefixedJson length_field_;
  std::size_t max_size_;
  bool overflowing_numbers_ = true, deep_nesting_ = true, many_keys_ = true;
};

}  // namespace shardscope::fuzz
