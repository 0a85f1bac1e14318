// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_export.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <set>

#include "cli_args.h"
#include "core/error.h"
#include "core/output_file.h"
#include "events/chrome_trace.h"
#include "events/recording.h"

namespace shardscope::cli {
namespace {

// A damaged recording may hold any times: a difference past 64 bits is taken in double.
double seconds_between(std::int64_t first_ns, std::int64_t last_ns) {
  std::int64_t ns = 0;
  if (__builtin_sub_overflow(last_ns, first_ns, &ns))
    return (static_cast<double>(last_ns) - static_cast<double>(first_ns)) * 1e-9;
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

int run_export(const std::vector<std::string>& args) {
  std::string chrome_trace, input;
  ArgParser parser("shardscope-cli export",
                   "Export a run recording (.ssrun) to the Trace Event Format, which ui.perfetto.dev and\n"
                   "chrome://tracing open: one process per rank, compute and communication on separate tracks.");
  parser.add_string("--chrome-trace", "FILE", "Write the trace JSON to FILE (replaced atomically)", &chrome_trace);
  parser.add_positional("RUN.ssrun", "The recording to export", &input);
  if (!parser.parse(args)) return 0;
  if (chrome_trace.empty()) throw UsageError("--chrome-trace FILE is required (see shardscope-cli export --help)");

  // Before anything is read or written: the input a regular file (a FIFO would
  // block), the trace not the recording itself, nor a link, directory or device.
  require_regular_input({"RUN.ssrun", input});
  check_outputs({{"the recording", input}}, {{"--chrome-trace", chrome_trace}});
  std::signal(SIGXFSZ, SIG_IGN);  // a write past `ulimit -f` is an error to report (EFBIG), not a kill

  RecordingReader reader;
  reader.open(input);
  const std::vector<Event> events = reader.read_all();
  if (const auto trailing = reader.trailing_bytes(); trailing > 0)
    std::fprintf(stderr,
                 "shardscope-cli export: warning: %s: ignored %llu bytes after the last complete record "
                 "(the run was cut off mid-write?)\n",
                 input.c_str(), static_cast<unsigned long long>(trailing));
  OutputFile trace({"--chrome-trace", chrome_trace});  // a temporary beside it, renamed over it when complete
  write_chrome_trace(events, reader.metadata_json(), trace.stream());
  trace.commit();

  std::set<std::int32_t> ranks;
  std::int64_t first_ns = 0, last_ns = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    ranks.insert(events[i].rank);
    first_ns = i == 0 ? events[i].start_ns : std::min(first_ns, events[i].start_ns);
    last_ns = i == 0 ? events[i].end_ns : std::max(last_ns, std::max(events[i].start_ns, events[i].end_ns));
  }
  std::printf("exported %zu events, %zu ranks, %.3f s to %s\n", events.size(), ranks.size(),
              seconds_between(first_ns, last_ns), chrome_trace.c_str());
  return 0;
}

}  // namespace shardscope::cli
