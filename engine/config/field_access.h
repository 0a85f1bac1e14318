// SPDX-License-Identifier: GPL-3.0-or-later
// How a schema row reads and writes its RunConfig member or parallel axis
// (config/run_schema.h): shared by the files that declare rows.
#pragma once

#include <nlohmann/json.hpp>
#include <type_traits>

#include "config/run_config.h"

namespace shardscope::field_access {

using nlohmann::json;

template <auto member>
json get_member(const RunConfig& c) {
  return c.*member;
}

template <auto member>
void set_member(RunConfig& c, const json& value) {
  c.*member = value.get<std::remove_cvref_t<decltype(c.*member)>>();
}

// A parallel axis's size (layout/parallel_axes.h).
template <Axis axis>
json get_axis(const RunConfig& c) {
  return c.layout[axis];
}

template <Axis axis>
void set_axis(RunConfig& c, const json& value) {
  c.layout[axis] = value.get<int>();
}

}  // namespace shardscope::field_access
