// SPDX-License-Identifier: GPL-3.0-or-later
// The link between two virtual devices (clock/device_clock.h): a transfer of
// b bytes takes latency + b / bandwidth (the alpha-beta model, Hockney 1994),
// one ring step or one message at a time. The constants and their sources:
//
//   link        bandwidth (one direction)                 latency per transfer
//   host        this machine's memcpy, measured once      1 us (a wake-up between two cores)
//   pcie4       31.5 GB/s: PCIe 4.0 x16, 16 GT/s x 16      5.7 us: NCCL's ring/simple step over PCI
//               lanes x 128b/130b (PCI-SIG)                (src/graph/tuning.cc, hwLat)
//   nvlink      450 GB/s: NVLink 4 of an H100 SXM, 900     3.4 us: NCCL's ring/simple step over
//               GB/s both directions (NVIDIA datasheet)    NVLink (hwLat)
//   infiniband  50 GB/s: NDR 400 Gb/s per port             9.6 us: NCCL's ring/simple step over
//               (ConnectX-7)                               the network (hwLat)
#pragma once

#include <cstdint>
#include <string>

#include "clock/clock_choices.h"

namespace shardscope {

struct LinkModel {
  LinkKind kind = LinkKind::host;
  double bytes_per_s = 1e10;
  double latency_s = 1e-6;

  // latency + bytes / bandwidth, in ns (at least 1 for a transfer of anything).
  std::int64_t transfer_ns(std::int64_t bytes) const;
  // The bandwidth part alone (a link busy with earlier transfers), in ns.
  std::int64_t wire_ns(std::int64_t bytes) const;
  // "pcie4: 31.5 GB/s, 5.7 us per transfer"
  std::string describe() const;
};

LinkModel make_link_model(LinkKind kind);

// This machine's memory-copy bandwidth in bytes/s: the best of a few copies of
// 32 MiB (beyond the caches), measured once per process (~30 ms).
double measured_host_copy_bandwidth();

}  // namespace shardscope
