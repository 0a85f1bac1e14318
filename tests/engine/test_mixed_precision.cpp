// SPDX-License-Identifier: GPL-3.0-or-later
// Mixed-precision foundations: f32 <-> f16 / bf16 conversions (bit-exact known
// values, round-to-nearest-even over a sweep of f32 patterns, every 16-bit
// pattern round-tripped), the array converters, the inf/NaN finder, and the
// loss scaler under PyTorch GradScaler and DeepSpeed rules.
#include <QTest>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/half.h"
#include "train/loss_scaler.h"

using namespace shardscope;
using namespace shardscope::half;

namespace {

float f32(std::uint32_t bits) { return half::bits_to_float(bits); }
std::uint32_t bits(float f) { return half::float_to_bits(f); }
float pow2(int e) { return std::ldexp(1.0f, e); }

// Checks that `conv` rounds x to nearest, ties to even, against the two
// neighbouring 16-bit magnitudes (an independent statement of RNE). `inf_bits`
// is the +inf pattern; for rounding, it stands for `past_max` (the next power
// of two after the largest finite value), as IEEE 754 rounds overflow.
template <typename Conv, typename Back>
void check_rne_sweep(Conv conv, Back back, std::uint16_t inf_bits, double past_max) {
  const auto value = [&](std::uint32_t m) {
    return m >= inf_bits ? past_max : static_cast<double>(back(static_cast<std::uint16_t>(m)));
  };
  std::int64_t checked = 0;
  for (std::uint64_t p = 0; p <= 0xFFFFFFFFull; p += 4093) {
    const float x = f32(static_cast<std::uint32_t>(p));
    if (!std::isfinite(x)) continue;
    const std::uint16_t h = conv(x);
    const std::uint32_t m = h & 0x7FFFu;
    const double ax = std::fabs(static_cast<double>(x));
    const double err = std::fabs(ax - value(m));
    const double err_up = std::fabs(ax - value(m + 1));
    const double err_down = m > 0 ? std::fabs(ax - value(m - 1)) : err + 1;
    bool ok = (h >> 15) == (bits(x) >> 31) && m <= inf_bits;  // sign kept, no NaN made
    if (m == inf_bits)  // overflow: x is at least halfway from the max finite to past_max
      ok = ok && err <= err_down;
    else
      ok = ok && err <= err_up && err <= err_down && ((err != err_up && err != err_down) || (m & 1u) == 0);
    if (!ok) QFAIL(qPrintable(QString("f32 0x%1 -> 0x%2").arg(p, 8, 16, QChar('0')).arg(h, 4, 16, QChar('0'))));
    ++checked;
  }
  QVERIFY(checked > 1000000);
}

}  // namespace

class TestMixedPrecision : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void f16_known_values();
  void accumulate_is_narrow_then_add();
  void f16_rounds_to_nearest_even();
  void f16_round_trips_every_pattern();
  void bf16_known_values();
  void bf16_rounds_to_nearest_even();
  void bf16_round_trips_every_pattern();
  void array_converters_match_scalars();
  void first_non_finite_reports_first_bad_index();
  void scaler_grad_scaler_defaults();
  void scaler_overflow_skips_and_halves();
  void scaler_torch_grows_after_interval();
  void scaler_deepspeed_growth_window();
  void scaler_deepspeed_hysteresis();
  void scaler_deepspeed_consecutive_hysteresis();
  void scaler_min_loss_scale_floor();
  void scaler_static_scale_never_changes();
  void scaler_disabled_for_bf16();
  void scaler_rejects_bad_options();
};

void TestMixedPrecision::f16_known_values() {
  const auto h = [](float x) { return static_cast<unsigned>(float_to_f16_bits(x)); };
  QCOMPARE(h(1.0f), 0x3C00u);
  QCOMPARE(h(-2.0f), 0xC000u);
  QCOMPARE(h(1.0f / 3.0f), 0x3555u);
  QCOMPARE(h(0.0f), 0x0000u);
  QCOMPARE(h(-0.0f), 0x8000u);
  // The top of the range: 65504 is the max; 65520 is the tie with 65536 (inf), even -> inf.
  QCOMPARE(h(65504.0f), 0x7BFFu);
  QCOMPARE(h(f32(0x477FEFFFu)), 0x7BFFu);  // 65519.996
  QCOMPARE(h(65520.0f), 0x7C00u);
  QCOMPARE(h(-65520.0f), 0xFC00u);
  QCOMPARE(h(1e6f), 0x7C00u);
  QCOMPARE(h(std::numeric_limits<float>::infinity()), 0x7C00u);
  QCOMPARE(h(-std::numeric_limits<float>::infinity()), 0xFC00u);
  // NaN: quiet, sign and top payload bits kept; never inf.
  QCOMPARE(h(f32(0x7FC00000u)), 0x7E00u);
  QCOMPARE(h(f32(0xFF800001u)), 0xFE00u);  // signalling, payload below f16's reach
  QCOMPARE(h(f32(0x7F802000u)), 0x7E01u);
  QVERIFY(f16_bits_is_nan(float_to_f16_bits(std::nanf(""))));
  // Subnormals and underflow (units of 2^-24).
  QCOMPARE(h(pow2(-24)), 0x0001u);
  QCOMPARE(h(pow2(-25)), 0x0000u);                // tie between 0 and 1 -> 0 (even)
  QCOMPARE(h(-pow2(-25)), 0x8000u);
  QCOMPARE(h(f32(0x33000001u)), 0x0001u);         // just above 2^-25
  QCOMPARE(h(3 * pow2(-25)), 0x0002u);            // 1.5 -> 2
  QCOMPARE(h(5 * pow2(-25)), 0x0002u);            // 2.5 -> 2
  QCOMPARE(h(7 * pow2(-25)), 0x0004u);            // 3.5 -> 4
  QCOMPARE(h(1023 * pow2(-24)), 0x03FFu);         // largest subnormal
  QCOMPARE(h(2047 * pow2(-25)), 0x0400u);         // 1023.5 units -> 1024 = smallest normal
  QCOMPARE(h(pow2(-14)), 0x0400u);                // smallest normal
  QCOMPARE(h(f32(0x00000001u)), 0x0000u);         // f32 subnormal
  // Ties in the normal range: 1 + 2^-11 is half an f16 ulp above 1.
  QCOMPARE(h(1.0f + pow2(-11)), 0x3C00u);
  QCOMPARE(h(1.0f + 3 * pow2(-11)), 0x3C02u);
  QCOMPARE(h(1.0f + pow2(-11) + pow2(-20)), 0x3C01u);
  QCOMPARE(h(2047.5f), 0x6800u);  // tie between 2047 (odd mantissa) and 2048 (even)
  // Widening.
  QCOMPARE(f16_bits_to_float(0x0001), pow2(-24));
  QCOMPARE(f16_bits_to_float(0x03FF), 1023 * pow2(-24));
  QCOMPARE(f16_bits_to_float(0x0400), pow2(-14));
  QCOMPARE(f16_bits_to_float(0x7BFF), 65504.0f);
  QCOMPARE(f16_bits_to_float(0x3555), 0.333251953125f);
  QCOMPARE(bits(f16_bits_to_float(0x8000)), 0x80000000u);
  QCOMPARE(bits(f16_bits_to_float(0x8001)), bits(-pow2(-24)));
  QCOMPARE(bits(f16_bits_to_float(0x7C00)), 0x7F800000u);
  QCOMPARE(bits(f16_bits_to_float(0xFC00)), 0xFF800000u);
  QCOMPARE(bits(f16_bits_to_float(0x7E01)), 0x7FC02000u);
  QCOMPARE(to_float(to_f16(0.5f)), 0.5f);
  QVERIFY(!f16_bits_is_finite(0x7C00) && !f16_bits_is_finite(0xFE00) && f16_bits_is_finite(0x7BFF));
}

void TestMixedPrecision::f16_rounds_to_nearest_even() {
  check_rne_sweep([](float x) { return float_to_f16_bits(x); }, [](std::uint16_t b) { return f16_bits_to_float(b); },
                  0x7C00, 65536.0);
}

void TestMixedPrecision::f16_round_trips_every_pattern() {
  int nans = 0;
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
    const auto h = static_cast<std::uint16_t>(p);
    const std::uint16_t back = float_to_f16_bits(f16_bits_to_float(h));
    if (f16_bits_is_nan(h)) {
      ++nans;
      QVERIFY(f16_bits_is_nan(back));
      QCOMPARE(back & 0x8000, h & 0x8000);
      if (h & 0x0200) QCOMPARE(back, h);  // quiet NaNs keep their payload exactly
    } else {
      QCOMPARE(back, h);
    }
  }
  QCOMPARE(nans, 2 * 1023);
}

void TestMixedPrecision::bf16_known_values() {
  const auto b = [](std::uint32_t x) { return static_cast<unsigned>(float_to_bf16_bits(f32(x))); };
  QCOMPARE(static_cast<unsigned>(float_to_bf16_bits(1.0f)), 0x3F80u);
  QCOMPARE(b(0x3F808000u), 0x3F80u);  // tie, keep even
  QCOMPARE(b(0x3F818000u), 0x3F82u);  // tie, round up to even
  QCOMPARE(b(0x3F808001u), 0x3F81u);
  QCOMPARE(b(0x3F807FFFu), 0x3F80u);
  QCOMPARE(b(0x3F80FFFFu), 0x3F81u);
  QCOMPARE(b(0x3FFF8000u), 0x4000u);  // the carry reaches the exponent
  // 3.4e38f is 0x7F7FC99E: past the midpoint 0x7F7F8000 between the max bf16
  // (0x7F7F = 3.3895e38) and 2^128, so RNE gives inf; 3.39e38f stays finite.
  QCOMPARE(bits(3.4e38f), 0x7F7FC99Eu);
  QCOMPARE(static_cast<unsigned>(float_to_bf16_bits(3.4e38f)), 0x7F80u);
  QCOMPARE(static_cast<unsigned>(float_to_bf16_bits(3.39e38f)), 0x7F7Fu);
  QCOMPARE(b(0x7F7F8000u), 0x7F80u);  // tie at the top, 0x7F7F is odd -> inf
  QCOMPARE(b(0x7F7E8000u), 0x7F7Eu);
  QCOMPARE(b(0x7F7FFFFFu), 0x7F80u);  // FLT_MAX
  QCOMPARE(b(0x7F800000u), 0x7F80u);
  QCOMPARE(b(0xFF800000u), 0xFF80u);
  // NaN stays NaN (plain rounding would turn 0x7F800001 into inf and 0x7FFFFFFF into -0).
  QCOMPARE(b(0x7FC00001u), 0x7FC0u);
  QCOMPARE(b(0x7F800001u), 0x7FC0u);
  QCOMPARE(b(0xFF800001u), 0xFFC0u);
  QCOMPARE(b(0x7FFFFFFFu), 0x7FFFu);
  QVERIFY(bf16_bits_is_nan(float_to_bf16_bits(std::nanf(""))));
  // Subnormals round like everything else.
  QCOMPARE(b(0x00008000u), 0x0000u);
  QCOMPARE(b(0x00018000u), 0x0002u);
  QCOMPARE(b(0x80008001u), 0x8001u);
  // Widening is a shift.
  QCOMPARE(bf16_bits_to_float(0x3F80), 1.0f);
  QCOMPARE(bits(bf16_bits_to_float(0x0001)), 0x00010000u);
  QCOMPARE(bits(bf16_bits_to_float(0xFF80)), 0xFF800000u);
  QCOMPARE(to_float(to_bf16(-3.0f)), -3.0f);
  QVERIFY(!bf16_bits_is_finite(0x7F80) && !bf16_bits_is_finite(0xFFC1) && bf16_bits_is_finite(0x7F7F));
}

void TestMixedPrecision::bf16_rounds_to_nearest_even() {
  check_rne_sweep([](float x) { return float_to_bf16_bits(x); },
                  [](std::uint16_t b) { return bf16_bits_to_float(b); }, 0x7F80, std::ldexp(1.0, 128));
}

void TestMixedPrecision::bf16_round_trips_every_pattern() {
  int nans = 0;
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
    const auto h = static_cast<std::uint16_t>(p);
    const std::uint16_t back = float_to_bf16_bits(bf16_bits_to_float(h));
    if (bf16_bits_is_nan(h)) {
      ++nans;
      QVERIFY(bf16_bits_is_nan(back));
      QCOMPARE(back & 0x8000, h & 0x8000);
      if (h & 0x0040) QCOMPARE(back, h);
    } else {
      QCOMPARE(back, h);
    }
  }
  QCOMPARE(nans, 2 * 127);
}

void TestMixedPrecision::array_converters_match_scalars() {
  const std::int64_t n = 10007;  // not a multiple of any vector width
  std::vector<float> in(static_cast<std::size_t>(n));
  std::uint32_t state = 12345;
  for (auto& v : in) {  // random bit patterns cover every class: zeros, subnormals, inf, NaN
    state = state * 1664525u + 1013904223u;
    v = f32(state);
  }
  in[0] = 65520.0f;
  in[1] = pow2(-25);
  in[2] = f32(0x7F800001u);
  std::vector<std::uint16_t> h(in.size()), b(in.size());
  f32_to_f16(in.data(), h.data(), n);
  f32_to_bf16(in.data(), b.data(), n);
  std::vector<float> hf(in.size()), bf(in.size());
  f16_to_f32(h.data(), hf.data(), n);
  bf16_to_f32(b.data(), bf.data(), n);
  for (std::size_t i = 0; i < in.size(); ++i) {
    QCOMPARE(h[i], float_to_f16_bits(in[i]));
    QCOMPARE(b[i], float_to_bf16_bits(in[i]));
    QCOMPARE(bits(hf[i]), bits(f16_bits_to_float(h[i])));
    QCOMPARE(bits(bf[i]), bits(bf16_bits_to_float(b[i])));
  }
  QCOMPARE(h[0], std::uint16_t{0x7C00});
  QCOMPARE(h[1], std::uint16_t{0});
  QCOMPARE(b[2], std::uint16_t{0x7FC0});
  f32_to_f16(in.data(), h.data(), 0);  // n = 0 writes nothing
  QCOMPARE(h[0], std::uint16_t{0x7C00});
}

void TestMixedPrecision::first_non_finite_reports_first_bad_index() {
  const std::int64_t n = 10000;  // more than two 4096-element chunks
  std::vector<float> g(static_cast<std::size_t>(n), 1.5f);
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{-1});
  QCOMPARE(first_non_finite(g.data(), 0), std::int64_t{-1});
  g[9999] = std::nanf("");
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{9999});
  QCOMPARE(first_non_finite(g.data(), 9999), std::int64_t{-1});
  g[7000] = std::numeric_limits<float>::infinity();
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{7000});
  g[5000] = -std::numeric_limits<float>::infinity();
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{5000});
  g[4095] = f32(0xFF800001u);
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{4095});
  g[0] = std::numeric_limits<float>::max();  // finite, however large
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{4095});
  g[0] = std::nanf("");
  QCOMPARE(first_non_finite(g.data(), n), std::int64_t{0});

  std::vector<std::uint16_t> h(static_cast<std::size_t>(n), 0x7BFF), b(static_cast<std::size_t>(n), 0x7F7F);
  QCOMPARE(first_non_finite_f16(h.data(), n), std::int64_t{-1});
  QCOMPARE(first_non_finite_bf16(b.data(), n), std::int64_t{-1});
  h[8191] = 0xFC00;
  h[8192] = 0x7E00;
  b[4096] = 0x7FC0;
  QCOMPARE(first_non_finite_f16(h.data(), n), std::int64_t{8191});
  QCOMPARE(first_non_finite_bf16(b.data(), n), std::int64_t{4096});
  // An f16 overflow made by the conversion is found in the 16-bit copy.
  std::vector<float> grads{1.0f, 70000.0f, 2.0f};
  std::vector<std::uint16_t> g16(3);
  f32_to_f16(grads.data(), g16.data(), 3);
  QCOMPARE(first_non_finite(grads.data(), 3), std::int64_t{-1});
  QCOMPARE(first_non_finite_f16(g16.data(), 3), std::int64_t{1});
}

void TestMixedPrecision::scaler_grad_scaler_defaults() {
  const LossScalerOptions o = LossScalerOptions::grad_scaler();
  QCOMPARE(o.initial_scale, 65536.0f);
  QCOMPARE(o.growth_factor, 2.0f);
  QCOMPARE(o.backoff_factor, 0.5f);
  QCOMPARE(o.growth_interval, std::int64_t{2000});
  QVERIFY(o.mode == LossScaleMode::dynamic && o.rules == LossScaleRules::torch_grad_scaler);
  DynamicLossScaler s;
  QCOMPARE(s.scale(), 65536.0f);
  QVERIFY(s.enabled());
  const DeepSpeedFp16Options ds;
  QCOMPARE(ds.initial_scale_power, 16);
  QCOMPARE(ds.loss_scale_window, std::int64_t{1000});
  QCOMPARE(ds.hysteresis, 2);
  QCOMPARE(ds.min_loss_scale, 1.0f);
  QCOMPARE(DynamicLossScaler(LossScalerOptions::deepspeed()).scale(), 65536.0f);
  QCOMPARE(DynamicLossScaler(LossScalerOptions::deepspeed()).hysteresis_left(), 2);
}

void TestMixedPrecision::scaler_overflow_skips_and_halves() {
  DynamicLossScaler s;
  for (int i = 0; i < 10; ++i) QVERIFY(!s.update(false).skipped);
  QCOMPARE(s.steps_since_overflow(), std::int64_t{10});
  const LossScaleUpdate u = s.update(true);
  QVERIFY(u.found_inf && u.skipped && u.backed_off && !u.grew);
  QCOMPARE(u.scale_used, 65536.0f);
  QCOMPARE(u.new_scale, 32768.0f);
  QCOMPARE(s.scale(), 32768.0f);
  QCOMPARE(s.overflows(), std::int64_t{1});
  QCOMPARE(s.skipped_steps(), std::int64_t{1});
  QCOMPARE(s.steps_since_overflow(), std::int64_t{0});
  QCOMPARE(s.growth_tracker(), std::int64_t{0});
  QCOMPARE(s.steps(), std::int64_t{11});
  QCOMPARE(s.update(true).new_scale, 16384.0f);
  const LossScaleUpdate clean = s.update(false);
  QVERIFY(!clean.skipped && !clean.found_inf);
  QCOMPARE(clean.scale_used, 16384.0f);
  QCOMPARE(s.skipped_steps(), std::int64_t{2});
}

void TestMixedPrecision::scaler_torch_grows_after_interval() {
  DynamicLossScaler s;
  for (int i = 0; i < 1999; ++i) QVERIFY(!s.update(false).grew);
  QCOMPARE(s.scale(), 65536.0f);
  QCOMPARE(s.growth_tracker(), std::int64_t{1999});
  const LossScaleUpdate u = s.update(false);  // the 2000th clean step
  QVERIFY(u.grew);
  QCOMPARE(s.scale(), 131072.0f);
  QCOMPARE(s.growth_tracker(), std::int64_t{0});
  // An overflow resets the tracker: 1999 clean steps after it are not enough.
  for (int i = 0; i < 1000; ++i) s.update(false);
  s.update(true);
  QCOMPARE(s.scale(), 65536.0f);
  for (int i = 0; i < 1999; ++i) s.update(false);
  QCOMPARE(s.scale(), 65536.0f);
  s.update(false);
  QCOMPARE(s.scale(), 131072.0f);
  // The scale never grows to inf.
  LossScalerOptions big = LossScalerOptions::grad_scaler();
  big.initial_scale = pow2(127);
  big.growth_interval = 1;
  DynamicLossScaler t(big);
  QVERIFY(!t.update(false).grew);
  QCOMPARE(t.scale(), pow2(127));
}

void TestMixedPrecision::scaler_deepspeed_growth_window() {
  DeepSpeedFp16Options ds;
  ds.initial_scale_power = 8;
  ds.loss_scale_window = 4;
  ds.hysteresis = 1;
  DynamicLossScaler s(LossScalerOptions::deepspeed(ds));
  QCOMPARE(s.scale(), 256.0f);
  // stable_interval = cur_iter - last_overflow_iter - 1 starts at 0: the first
  // growth comes on the 5th clean step (window + 1), later ones every 4.
  for (int i = 0; i < 4; ++i) s.update(false);
  QCOMPARE(s.scale(), 256.0f);
  QVERIFY(s.update(false).grew);
  QCOMPARE(s.scale(), 512.0f);
  for (int i = 0; i < 3; ++i) s.update(false);
  QCOMPARE(s.scale(), 512.0f);
  s.update(false);
  QCOMPARE(s.scale(), 1024.0f);
  QVERIFY(s.update(true).skipped);
  QCOMPARE(s.scale(), 512.0f);
  for (int i = 0; i < 4; ++i) s.update(false);
  QCOMPARE(s.scale(), 512.0f);
  s.update(false);
  QCOMPARE(s.scale(), 1024.0f);
}

void TestMixedPrecision::scaler_deepspeed_hysteresis() {
  DeepSpeedFp16Options ds;  // hysteresis 2, consecutive_hysteresis false
  ds.loss_scale_window = 4;
  DynamicLossScaler s(LossScalerOptions::deepspeed(ds));
  LossScaleUpdate u = s.update(true);  // absorbed by the hysteresis: skipped, scale kept
  QVERIFY(u.skipped && u.hysteresis_consumed && !u.backed_off);
  QCOMPARE(s.scale(), 65536.0f);
  QCOMPARE(s.hysteresis_left(), 1);
  u = s.update(true);  // the second one halves
  QVERIFY(u.skipped && u.backed_off && !u.hysteresis_consumed);
  QCOMPARE(s.scale(), 32768.0f);
  QCOMPARE(s.hysteresis_left(), 1);
  // Clean steps do not refill the hysteresis (consecutive_hysteresis false):
  // a later, non-consecutive overflow halves again.
  for (int i = 0; i < 3; ++i) s.update(false);
  QCOMPARE(s.hysteresis_left(), 1);
  s.update(true);
  QCOMPARE(s.scale(), 16384.0f);
  // Only a growth refills it: 5 clean steps after the overflow grow the scale.
  for (int i = 0; i < 5; ++i) s.update(false);
  QCOMPARE(s.scale(), 32768.0f);
  QCOMPARE(s.hysteresis_left(), 2);
  QVERIFY(s.update(true).hysteresis_consumed);
  QCOMPARE(s.scale(), 32768.0f);
  QCOMPARE(s.overflows(), std::int64_t{4});
  QCOMPARE(s.skipped_steps(), std::int64_t{4});
}

void TestMixedPrecision::scaler_deepspeed_consecutive_hysteresis() {
  DeepSpeedFp16Options ds;
  ds.hysteresis = 2;
  ds.consecutive_hysteresis = true;
  DynamicLossScaler s(LossScalerOptions::deepspeed(ds));
  for (int i = 0; i < 3; ++i) {  // overflow, clean, ...: every clean step refills, the scale never drops
    QVERIFY(s.update(true).hysteresis_consumed);
    QCOMPARE(s.hysteresis_left(), 1);
    s.update(false);
    QCOMPARE(s.hysteresis_left(), 2);
  }
  QCOMPARE(s.scale(), 65536.0f);
  s.update(true);
  QVERIFY(s.update(true).backed_off);  // two in a row
  QCOMPARE(s.scale(), 32768.0f);
}

void TestMixedPrecision::scaler_min_loss_scale_floor() {
  DeepSpeedFp16Options ds;
  ds.initial_scale_power = 3;
  ds.hysteresis = 1;
  ds.min_loss_scale = 3.0f;
  DynamicLossScaler s(LossScalerOptions::deepspeed(ds));
  QCOMPARE(s.update(true).new_scale, 4.0f);
  QCOMPARE(s.update(true).new_scale, 3.0f);  // max(2, 3)
  const LossScaleUpdate u = s.update(true);
  QVERIFY(u.skipped);
  QCOMPARE(u.new_scale, 3.0f);
  QCOMPARE(s.skipped_steps(), std::int64_t{3});
  // raise_error_at_min_scale: an overflow at the floor is fatal, as in DeepSpeed.
  ds.min_loss_scale = 4.0f;
  ds.raise_error_at_min_scale = true;
  DynamicLossScaler r(LossScalerOptions::deepspeed(ds));
  QCOMPARE(r.update(true).new_scale, 4.0f);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, r.update(true));
}

void TestMixedPrecision::scaler_static_scale_never_changes() {
  DeepSpeedFp16Options ds;
  ds.loss_scale = 128.0f;
  DynamicLossScaler s(LossScalerOptions::deepspeed(ds));
  QVERIFY(s.options().mode == LossScaleMode::fixed);
  QCOMPARE(s.scale(), 128.0f);
  const LossScaleUpdate u = s.update(true);
  QVERIFY(u.found_inf && u.skipped && !u.backed_off);
  QCOMPARE(u.new_scale, 128.0f);
  for (int i = 0; i < 5000; ++i) QVERIFY(!s.update(false).grew);
  s.update(true);
  QCOMPARE(s.scale(), 128.0f);
  QCOMPARE(s.overflows(), std::int64_t{2});
  QCOMPARE(s.skipped_steps(), std::int64_t{2});
}

void TestMixedPrecision::scaler_disabled_for_bf16() {
  DynamicLossScaler s(LossScalerOptions::disabled());
  QVERIFY(!s.enabled());
  QCOMPARE(s.scale(), 1.0f);
  const LossScaleUpdate u = s.update(true);
  QVERIFY(u.found_inf && !u.skipped);
  QCOMPARE(u.new_scale, 1.0f);
  for (int i = 0; i < 3000; ++i) s.update(false);
  QCOMPARE(s.scale(), 1.0f);
  QCOMPARE(s.skipped_steps(), std::int64_t{0});
  QCOMPARE(s.overflows(), std::int64_t{1});
}

void TestMixedPrecision::scaler_rejects_bad_options() {
  LossScalerOptions o;
  o.growth_interval = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DynamicLossScaler{o});
  o = LossScalerOptions{};
  o.backoff_factor = 1.0f;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DynamicLossScaler{o});
  o = LossScalerOptions{};
  o.initial_scale = -1.0f;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DynamicLossScaler{o});
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DynamicLossScaler{LossScalerOptions::fixed(0.0f)});
  DeepSpeedFp16Options ds;
  ds.hysteresis = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DynamicLossScaler{LossScalerOptions::deepspeed(ds)});
  ds = DeepSpeedFp16Options{};
  ds.initial_scale_power = 200;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, LossScalerOptions::deepspeed(ds));
}

// Accumulating an fp32 gradient into 16-bit storage rounds it to 16 bits first,
// then adds in 16 bits: exactly narrow followed by add_into, overflow to inf included.
void TestMixedPrecision::accumulate_is_narrow_then_add() {
  std::vector<float> grad;
  std::vector<float> stored_values;
  for (int i = 0; i < 4096; ++i) {
    grad.push_back(std::ldexp(static_cast<float>((i * 7919) % 2001 - 1000), (i % 40) - 24));
    stored_values.push_back(std::ldexp(static_cast<float>((i * 104729) % 1999 - 999), (i % 36) - 20));
  }
  grad.push_back(60000.0f);  // 60000 + 60000 overflows f16
  stored_values.push_back(60000.0f);
  const auto n = static_cast<std::int64_t>(grad.size());
  for (DType dtype : {DType::f16, DType::bf16}) {
    std::vector<std::uint16_t> fused(grad.size()), reference(grad.size()), rounded(grad.size());
    half::narrow(dtype, stored_values.data(), fused.data(), n);
    reference = fused;
    half::accumulate(dtype, fused.data(), grad.data(), n);
    half::narrow(dtype, grad.data(), rounded.data(), n);
    half::add_into(dtype, reference.data(), rounded.data(), n);
    QVERIFY(fused == reference);
  }
  std::vector<std::uint16_t> last(1);
  half::narrow(DType::f16, &stored_values.back(), last.data(), 1);
  half::accumulate(DType::f16, last.data(), &grad.back(), 1);
  QCOMPARE(last[0], std::uint16_t{0x7C00});  // +inf
}

QTEST_GUILESS_MAIN(TestMixedPrecision)
#include "test_mixed_precision.moc"
