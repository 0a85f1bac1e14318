// SPDX-License-Identifier: GPL-3.0-or-later
// Deterministic random numbers, identical on every platform and compiler
// (std::normal_distribution is not): SplitMix64 for seeding streams,
// xoshiro256** for the stream, Box-Muller for normals.
#pragma once

#include <cmath>
#include <cstdint>

namespace shardscope {

constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Mixes several integers into one seed: used to give every (seed, step, sample)
// its own stream, so a sample is the same whatever rank draws it.
constexpr std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  std::uint64_t s = a;
  std::uint64_t x = splitmix64(s) ^ b;
  x = splitmix64(x) ^ c;
  return splitmix64(x);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

  // Uniform integer in [0, n).
  // The modulo bias is below n / 2^64: irrelevant for the sizes used here.
  std::uint64_t below(std::uint64_t n) { return next_u64() % n; }

  float normal(float mean, float stddev) {
    // Box-Muller on doubles for accuracy; u1 in (0, 1] avoids log(0).
    const double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    const double u2 = static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return mean + stddev * static_cast<float>(z);
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace shardscope
