// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/clock_choices.h"

#include <string>

#include "core/error.h"

namespace shardscope {

std::string_view clock_kind_name(ClockKind kind) {
  return kind == ClockKind::wall ? "wall" : "virtual";
}

ClockKind parse_clock_kind(std::string_view name) {
  for (auto kind : {ClockKind::virtual_device, ClockKind::wall})
    if (name == clock_kind_name(kind)) return kind;
  throw ConfigError("--clock must be virtual or wall (got \"" + std::string(name) + "\")");
}

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::pcie4:
      return "pcie4";
    case LinkKind::nvlink:
      return "nvlink";
    case LinkKind::infiniband:
      return "infiniband";
    case LinkKind::host:
      break;
  }
  return "host";
}

LinkKind parse_link_kind(std::string_view name) {
  for (auto kind : {LinkKind::host, LinkKind::pcie4, LinkKind::nvlink, LinkKind::infiniband})
    if (name == link_kind_name(kind)) return kind;
  throw ConfigError("--link must be host, pcie4, nvlink or infiniband (got \"" + std::string(name) + "\")");
}

}  // namespace shardscope
