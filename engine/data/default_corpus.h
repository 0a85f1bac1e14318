// SPDX-License-Identifier: GPL-3.0-or-later
// The shipped default corpus (resources/corpus/default.txt: English and
// Chinese public-domain text, see its LICENSE.md), embedded in the binary so
// the program trains out of the box with no file to find.
#pragma once

#include <string_view>

namespace shardscope {

std::string_view default_corpus();

}  // namespace shardscope
