// SPDX-License-Identifier: GPL-3.0-or-later
// Sizes computed from the user's input (parameter counts, bytes, tokens per
// step) in 64 bits that never wrap around: a product or sum past 2^63 - 1 is a
// SizeOverflow, a ConfigError, so the CLI exits 2 instead of printing a
// negative byte count. Where the user's numbers come in, callers catch it and
// name the fields (vocab_size, --micro-batch, ...); unnamed it still says which
// numbers did not fit.
//
//   const CheckedSize h = hidden, I = intermediate;
//   const std::int64_t per_layer = (4 * h * h + 2 * h * I).value();
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/error.h"

namespace shardscope {

// 9,223,372,036,854,775,807: the largest size (and the largest byte count, 9.2 EB) the program counts.
inline constexpr std::int64_t kMaxSize = std::numeric_limits<std::int64_t>::max();

class SizeOverflow : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// a × b, or nullopt when the product does not fit in 64 bits.
inline std::optional<std::int64_t> product_if_fits(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a × b, or SizeOverflow when the product does not fit in 64 bits.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  const auto out = product_if_fits(a, b);
  if (!out) throw SizeOverflow(std::to_string(a) + " × " + std::to_string(b) + " does not fit in 64 bits");
  return *out;
}

// a + b, or SizeOverflow when the sum does not fit in 64 bits.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw SizeOverflow(std::to_string(a) + " + " + std::to_string(b) + " does not fit in 64 bits");
  return out;
}

// a − b, or SizeOverflow when the difference does not fit in 64 bits.
inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out))
    throw SizeOverflow(std::to_string(a) + " − " + std::to_string(b) + " does not fit in 64 bits");
  return out;
}

// A 64-bit size whose + − × are checked: formulas read as written.
class CheckedSize {
 public:
  constexpr CheckedSize(std::int64_t value = 0) : value_(value) {}  // NOLINT: implicit, so 2 * h reads naturally
  constexpr std::int64_t value() const { return value_; }

  friend CheckedSize operator*(CheckedSize a, CheckedSize b) { return checked_mul(a.value_, b.value_); }
  friend CheckedSize operator+(CheckedSize a, CheckedSize b) { return checked_add(a.value_, b.value_); }
  friend CheckedSize operator-(CheckedSize a, CheckedSize b) { return checked_sub(a.value_, b.value_); }
  CheckedSize& operator*=(CheckedSize b) { return *this = *this * b; }
  CheckedSize& operator+=(CheckedSize b) { return *this = *this + b; }
  friend bool operator==(CheckedSize, CheckedSize) = default;
  friend auto operator<=>(CheckedSize, CheckedSize) = default;

 private:
  std::int64_t value_;
};

// `value` as an int when it fits, else ConfigError naming `field` (narrowing refused, never wrapped).
inline int checked_int(std::int64_t value, const std::string& field) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    throw ConfigError(field + ": " + std::to_string(value) + " does not fit in a 32-bit integer");
  return static_cast<int>(value);
}

}  // namespace shardscope
