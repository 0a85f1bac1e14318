// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the engine tests.
#pragma once

#include <QTest>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"

namespace shardscope::test {

inline std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = rng.normal(0.0f, scale);
  return v;
}

// Largest |a - b| / (atol + rtol |b|); <= 1 means a matches b within tolerance.
inline double worst_mismatch(const float* a, const float* b, std::size_t n, double atol, double rtol,
                             std::size_t* where = nullptr) {
  double worst = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::fabs(static_cast<double>(b[i])));
    if (!(err <= worst)) {  // also catches NaN
      worst = std::isnan(err) ? INFINITY : err;
      if (where != nullptr) *where = i;
    }
  }
  return worst;
}

// Central finite differences of `loss` with respect to every element of x,
// compared with `analytic`. The loss is evaluated in double over float ops.
inline void check_gradient(const char* what, std::vector<float>& x, const std::vector<float>& analytic,
                           const std::function<double()>& loss, double h = 1e-2, double atol = 1e-3,
                           double rtol = 1e-2) {
  QCOMPARE(analytic.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + h);
    const double up = loss();
    x[i] = static_cast<float>(saved - h);
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    const double err = std::fabs(numeric - analytic[i]);
    if (!(err <= atol + rtol * std::fabs(numeric))) {
      QFAIL(qPrintable(QString("%1: element %2: finite difference %3, backward %4")
                           .arg(what)
                           .arg(i)
                           .arg(numeric, 0, 'g', 7)
                           .arg(static_cast<double>(analytic[i]), 0, 'g', 7)));
    }
  }
}

// sum_i out[i] * weights[i], in double: a scalar loss whose gradient wrt out is `weights`.
inline double weighted_sum(const std::vector<float>& out, const std::vector<float>& weights) {
  double s = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * weights[i];
  return s;
}

}  // namespace shardscope::test
