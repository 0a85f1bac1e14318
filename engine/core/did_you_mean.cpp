// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/did_you_mean.h"

#include <algorithm>
#include <vector>

namespace shardscope {

// The optimal-string-alignment distance by dynamic programming over three rows:
// d(i, j) for the first i characters of a against the first j of b.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);  // two neighbours swapped
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

namespace {
std::size_t edits_allowed(std::size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return length / 4;
}
}  // namespace

std::string nearest_name(std::string_view typed, std::span<const std::string> candidates) {
  const std::string* best = nullptr;
  std::size_t best_distance = edits_allowed(typed.size()) + 1;
  for (const std::string& name : candidates) {
    const std::size_t d = edit_distance(typed, name);
    if (d < best_distance) {
      best = &name;
      best_distance = d;
    }
  }
  return best == nullptr ? std::string() : *best;
}

std::string did_you_mean(std::string_view typed, std::span<const std::string> candidates) {
  const std::string name = nearest_name(typed, candidates);
  return name.empty() ? std::string() : "; did you mean '" + name + "'?";
}

}  // namespace shardscope
