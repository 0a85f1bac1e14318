// SPDX-License-Identifier: GPL-3.0-or-later
// A pipeline schedule written by hand (`shardscope-cli schedule --schedule-file`),
// as torch.distributed.pipelining's schedule runtime (used by torchtitan) reads
// one from CSV: a row per rank, a cell per compute action in the order the
// rank runs them, "{stage}{type}{micro-batch}" with the stage counted over the
// whole model (virtual stage chunk·p + rank, Megatron's round-robin placement)
// and the type F (forward), B (full backward), I (input gradient, a W later)
// or W (weight gradient): "0F0,0F1,0B0,0B1". Empty cells are skipped. The
// transfers follow from the computations, as that runtime adds them. A file
// named *.json holds the same as a list per rank of its actions,
// [[{"phase": "F", "micro_batch": 0, "chunk": 0}, ...], ...] (chunk 0 when left
// out), or {"schedule": that list}, and is checked as the CSV it stands for.
//
// Checked before anything runs, each refusal naming the rank and the action:
// cells that are not actions, a stage on the wrong rank, a (chunk,
// micro-batch) whose F, backward or W is missing or twice, a backward before
// its F or a W before its I, an I with no W or a B with one; then the lists
// are run on the simulator (sends posted, receives waited for): a schedule
// that cannot finish names what each stuck rank waits at. Lists of one chunk
// per rank also pass the NCCL rendezvous check of pipeline_schedule.h, with
// sends and receives fused as the built-in schedules' are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"
#include "plan/pipeline_schedule.h"

namespace shardscope {

struct ScheduleFile {
  PipelineSchedule schedule;  // [rank] its actions, transfers included
  int stages = 0;             // ranks (rows), p
  int micro_batches = 0;      // m
  int virtual_stages = 1;     // chunks per rank, v
  // round_robin: rank r holds stages r, p + r, ...; v_shape: stages r and
  // 2p - 1 - r (ZB-V's V, torch.distributed.pipelining's "v" style), a CSV
  // whose stage 2p - 1 - r sits on rank r (for p > 1, the stage p + r elsewhere).
  ChunkPlacement placement = ChunkPlacement::round_robin;
};

// `name` is what the messages call the file (its path).
ScheduleFile parse_schedule_csv(std::string_view text, const std::string& name);
// The file's compute actions written back as CSV, a row per rank (its
// transfers follow from them): parse_schedule_csv of these rows gives the same
// file. A recording carries a --schedule-file run's schedule so.
std::vector<std::string> schedule_csv_rows(const ScheduleFile& file);
// Reads and parses the file; ConfigError naming --schedule-file if it cannot be read.
ScheduleFile load_schedule_file(const std::string& path);
// How many times this process has called load_schedule_file, so a test can
// hold a run to one read (make_run_plan's).
std::int64_t schedule_files_read();

// A run's --schedule-file against its layout: as many rows as --pp, as many
// micro-batches as --micro-batches, as many chunks per rank as
// --virtual-stages (stage c·p + r on rank r; a V file, with --schedule zb-v
// instead), and with W's the split-backward rules of config/run_config.h.
// FieldError / ConfigError naming the flags and numbers. The first reads
// config.schedule_file (nothing without one); the second checks a file already read.
void validate_schedule_file(const RunConfig& config);
void validate_schedule_file(const ScheduleFile& file, const RunConfig& config);

}  // namespace shardscope
