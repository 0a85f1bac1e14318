// SPDX-License-Identifier: GPL-3.0-or-later
// "Did you mean": the known name nearest to a mistyped one, for the messages
// that refuse an unknown flag, model preset, lesson or command. Nearness is
// the edit distance (Levenshtein 1966, with adjacent transpositions as one
// edit: Damerau 1964), so "--step" finds "--steps" and "trian" finds "train".
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace shardscope {

// The fewest insertions, deletions, substitutions and swaps of two adjacent
// characters that turn `a` into `b` (bytes; case matters).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed`, if it is near enough to be a typo: at most
// 1 edit for a name of up to 4 characters, 2 up to 8, else a quarter of the
// name's length (ties: the first listed). Empty when none is.
std::string nearest_name(std::string_view typed, std::span<const std::string> candidates);

// "; did you mean '--steps'?" for the nearest name, or "" when none is near:
// "unknown flag '--step'" + did_you_mean(...) + " (see --help)".
std::string did_you_mean(std::string_view typed, std::span<const std::string> candidates);

}  // namespace shardscope
