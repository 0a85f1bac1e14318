// SPDX-License-Identifier: GPL-3.0-or-later
// Export of a run's events to the Trace Event Format (the JSON that Perfetto,
// ui.perfetto.dev and chrome://tracing open), so a timeline can be shared.
//
// Mapping:
//   one process per rank, pid = rank + 1 (pid 0 is special to some viewers),
//   named "rank R (stage S)" and sorted by rank; in it one thread (track) per
//   kind of activity, tid = pid * 10000 + track * 1000 + lane, so tids are
//   unique across processes:
//     track 0 "steps & logs":  step instants, log and error instants ("i")
//     track 1 "compute":       forward/backward/recompute/optimizer spans ("X")
//     track 2 "communication": transfers ("X"), on their own track so overlap
//                              with compute is visible
//     track 3 "ZeRO shards":   parameter gather/release spans ("X")
//   Spans of one track must nest for the viewers; a span that overlaps another
//   without nesting (a send still waiting for its receiver when the next one
//   starts) goes to the next lane, a thread named e.g. "communication 2".
//   step_metrics also become counters ("C"): loss, eval loss, tokens/s, lr,
//   grad norm; memory_sample a "memory (bytes)" counter with one series per
//   category. Times are microseconds (ts, dur), as the format requires.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "events/event.h"

namespace shardscope {

// Streams the trace (one event per line) to out. metadata_json (the
// recording's run config) is kept as a string under "otherData". Throws
// std::ios_base::failure only if out is set to throw; check out afterwards.
void write_chrome_trace(const std::vector<Event>& events, const std::string& metadata_json, std::ostream& out);

}  // namespace shardscope
