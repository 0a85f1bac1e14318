// SPDX-License-Identifier: GPL-3.0-or-later
// The clock choices of a run (RunConfig::clock, RunConfig::link), apart from
// the config so the clock, the model and the communicators can name them.
#pragma once

#include <string_view>

namespace shardscope {

// Which clock the events of a run are stamped with (clock/device_clock.h):
// every CPU rank on its own virtual device (compute spans last as long as the
// rank's own CPU work, communication as long as the link model says), or the
// wall clock of this machine (how long the threads took, sharing its cores).
enum class ClockKind { virtual_device, wall };
std::string_view clock_kind_name(ClockKind kind);  // "virtual" or "wall"
ClockKind parse_clock_kind(std::string_view name);  // ConfigError naming --clock

// The link between the virtual devices (clock/link_model.h): this machine's
// measured memory-copy bandwidth, PCIe 4.0 x16, NVLink 4 (H100) or InfiniBand NDR.
enum class LinkKind { host, pcie4, nvlink, infiniband };
std::string_view link_kind_name(LinkKind kind);  // "host", "pcie4", "nvlink", "infiniband"
LinkKind parse_link_kind(std::string_view name);  // ConfigError naming --link

}  // namespace shardscope
