// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline schedules from CSV files (schedule_file.h).
#include "plan/schedule_file.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "config/run_schema.h"
#include "core/error.h"
#include "core/json_text.h"
#include "plan/interleaved_schedule.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

struct Cell {
  int virtual_stage = 0, micro_batch = 0;
  char type = 'F';  // F, B, I or W as written
  std::string text;
};

[[noreturn]] void refuse(const std::string& name, int rank, const std::string& what) {
  throw ConfigError("--schedule-file " + name + ": rank " + std::to_string(rank) + ", " + what);
}

// "12I3" -> stage 12, I, micro-batch 3; nullopt-like false for anything else.
bool parse_cell(const std::string& text, Cell& cell) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i > 6 || i + 1 >= text.size() || std::string("FBIW").find(text[i]) == std::string::npos) return false;
  const std::string digits = text.substr(i + 1);
  if (digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  cell = {std::stoi(text.substr(0, i)), std::stoi(digits), text[i], text};
  return true;
}

std::string trimmed(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

std::vector<std::vector<Cell>> read_rows(std::string_view text, const std::string& name) {
  std::vector<std::vector<Cell>> rows;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (trimmed(line).empty()) continue;
    std::vector<Cell>& row = rows.emplace_back();
    std::istringstream cells(line);
    for (std::string field; std::getline(cells, field, ',');) {
      field = trimmed(field);
      if (field.empty()) continue;
      Cell cell;
      if (!parse_cell(field, cell))
        refuse(name, static_cast<int>(rows.size()) - 1,
               "action " + std::to_string(row.size()) + " '" + field +
                   "' is not an action: write {stage}{F|B|I|W}{micro-batch}, e.g. 0F3");
      row.push_back(cell);
    }
  }
  if (rows.empty()) throw ConfigError("--schedule-file " + name + ": no rows (one row of actions per rank)");
  return rows;
}

// One action of a JSON schedule as a CSV cell: {"phase": "F", "micro_batch": 3, "chunk": 1}
// on rank r of p is stage chunk·p + r (chunk 0 when left out).
std::string json_action_cell(const nlohmann::json& a, std::size_t rank, std::size_t ranks, std::size_t index,
                             const std::string& name) {
  const auto field = [&](const char* key) -> const nlohmann::json* {
    const auto it = a.is_object() ? a.find(key) : a.end();
    return a.is_object() && it != a.end() ? &*it : nullptr;
  };
  const nlohmann::json *phase = field("phase"), *micro_batch = field("micro_batch"), *chunk = field("chunk");
  const bool ok = phase != nullptr && phase->is_string() && phase->get<std::string>().size() == 1 &&
                  std::string("FBIW").find(phase->get<std::string>()) != std::string::npos && micro_batch != nullptr &&
                  micro_batch->is_number_unsigned() && (chunk == nullptr || chunk->is_number_unsigned());
  const std::uint64_t c = ok && chunk != nullptr ? chunk->get<std::uint64_t>() : 0;
  if (!ok || c > 999 || micro_batch->get<std::uint64_t>() > 99999)
    refuse(name, static_cast<int>(rank),
           "action " + std::to_string(index) + " (" + json_value_summary(a) +
               ") is not an action: write {\"phase\": \"F\"|\"B\"|\"I\"|\"W\", \"micro_batch\": m, \"chunk\": c}");
  return std::to_string(c * ranks + rank) + phase->get<std::string>() +
         std::to_string(micro_batch->get<std::uint64_t>());
}

// A JSON schedule, [[action, ...] per rank] or {"schedule": that}, written as the
// CSV it stands for, so that it is checked (and refused) as a CSV is.
std::string json_schedule_as_csv(std::string_view text, const std::string& name) {
  JsonTextError error;
  const std::optional<nlohmann::json> doc = parse_json_text(text, error);
  if (!doc) throw ConfigError("--schedule-file " + name + ": not JSON: " + error.where_and_why());
  const auto wrapped = doc->is_object() ? doc->find("schedule") : doc->end();
  const nlohmann::json& ranks = doc->is_object() && wrapped != doc->end() ? *wrapped : *doc;
  if (!ranks.is_array() || ranks.empty())
    throw ConfigError("--schedule-file " + name + ": expected a list with a list of actions per rank (got " +
                      json_value_summary(ranks) + ")");
  std::string csv;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].is_array() || ranks[r].empty())
      refuse(name, static_cast<int>(r),
             "expected a non-empty list of actions (got " + json_value_summary(ranks[r]) + ")");
    for (std::size_t i = 0; i < ranks[r].size(); ++i)
      csv += json_action_cell(ranks[r][i], r, ranks.size(), i, name) + ",";
    csv += "\n";
  }
  return csv;
}

// Each rank's (chunk, micro-batch) phases: one F, one backward (B, or I and a
// W after it), in that order; every (chunk, micro-batch) of the run present.
void check_phases(const std::vector<Cell>& row, int rank, int stages, int chunks, int micro_batches,
                  const std::string& name) {
  std::map<std::tuple<int, int, char>, int> at;  // (chunk, micro-batch, F / backward / W) -> position
  for (int i = 0; i < static_cast<int>(row.size()); ++i) {
    const Cell& c = row[static_cast<std::size_t>(i)];
    const std::string action = "action " + std::to_string(i) + " '" + c.text + "'";
    const char phase = c.type == 'I' ? 'B' : c.type;
    const int chunk = c.virtual_stage / stages;
    if (!at.emplace(std::tuple{chunk, c.micro_batch, phase}, i).second)
      refuse(name, rank, action + ": that " + (phase == 'B' ? "backward" : std::string(1, phase)) + " runs twice");
    if (phase != 'F' && !at.contains({chunk, c.micro_batch, 'F'}))
      refuse(name, rank,
             action + ": runs before the forward " + std::to_string(c.virtual_stage) + "F" +
                 std::to_string(c.micro_batch));
    if (phase == 'W' && !at.contains({chunk, c.micro_batch, 'B'}))
      refuse(name, rank,
             action + ": a weight gradient before its input gradient " + std::to_string(c.virtual_stage) + "I" +
                 std::to_string(c.micro_batch));
  }
  for (int i = 0; i < static_cast<int>(row.size()); ++i) {
    const Cell& c = row[static_cast<std::size_t>(i)];
    const bool has_w = at.contains({c.virtual_stage / stages, c.micro_batch, 'W'});
    if ((c.type == 'I' && !has_w) || (c.type == 'B' && has_w))
      refuse(name, rank,
             "action " + std::to_string(i) + " '" + c.text + "': " +
                 (c.type == 'I' ? "an input gradient with no W after it (a whole backward is B)"
                                : "a whole backward B with a W too (split it as I then W)"));
  }
  for (int chunk = 0; chunk < chunks; ++chunk)
    for (int j = 0; j < micro_batches; ++j)
      for (char phase : {'F', 'B'})
        if (!at.contains({chunk, j, phase}))
          refuse(name, rank,
                 "micro-batch " + std::to_string(j) + " of stage " + std::to_string(chunk * stages + rank) +
                     " has no " + (phase == 'F' ? "forward (F)" : "backward (B, or I and W)"));
}

// The compute actions with their transfers, as interleaved_schedule.h's
// neighbours say: a receive right before the F or backward that reads it, a
// send right after the one that makes it.
std::vector<PipelineAction> with_transfers(const std::vector<Cell>& row, int rank, int stages, int chunks) {
  std::vector<PipelineAction> list;
  const auto add = [&](Type type, int micro_batch, int peer, int chunk) {
    PipelineAction a{type, micro_batch, peer, rank};
    a.chunk = chunk;
    list.push_back(a);
  };
  for (const Cell& c : row) {
    const int chunk = c.virtual_stage / stages;
    const std::optional<int> before = previous_stage_of(rank, chunk, stages);
    const std::optional<int> after = next_stage_of(rank, chunk, stages, chunks);
    if (c.type == 'F') {
      if (before) add(Type::recv_activation, c.micro_batch, *before, chunk);
      add(Type::forward, c.micro_batch, -1, chunk);
      if (after) add(Type::send_activation, c.micro_batch, *after, chunk);
    } else if (c.type == 'W') {
      add(Type::weight_gradient, c.micro_batch, -1, chunk);
    } else {
      if (after) add(Type::recv_gradient, c.micro_batch, *after, chunk);
      add(Type::backward, c.micro_batch, -1, chunk);
      if (before) add(Type::send_gradient, c.micro_batch, *before, chunk);
    }
  }
  return list;
}

// The rank of a stuck action: the simulator names "stage S".
void check_runs(const ScheduleFile& file, const std::string& name) {
  try {
    simulate_pipeline_schedule(file.schedule, 1, 1, 0, 1);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("--schedule-file " + name + ": " + e.what() + " (stage s is rank s)");
  }
  if (file.virtual_stages > 1) return;  // chunked lists: the runtime must post a step's transfers as one group
  const std::string problem = pipeline_schedule_rendezvous_problem(file.schedule);
  if (!problem.empty())
    throw ConfigError("--schedule-file " + name + ": hangs where a send waits for its receive (NCCL): " + problem +
                      "(stage s is rank s)");
}

}  // namespace

ScheduleFile parse_schedule_csv(std::string_view text, const std::string& name) {
  const std::vector<std::vector<Cell>> rows = read_rows(text, name);
  ScheduleFile file;
  file.stages = static_cast<int>(rows.size());
  for (int r = 0; r < file.stages; ++r)
    for (const Cell& c : rows[static_cast<std::size_t>(r)]) {
      if (c.virtual_stage % file.stages != r)
        refuse(name, r,
               "action '" + c.text + "': stage " + std::to_string(c.virtual_stage) + " is on rank " +
                   std::to_string(c.virtual_stage % file.stages) +
                   " (rank r holds stages r, p + r, 2p + r, ...; p = " + std::to_string(file.stages) + " rows)");
      file.virtual_stages = std::max(file.virtual_stages, c.virtual_stage / file.stages + 1);
      file.micro_batches = std::max(file.micro_batches, c.micro_batch + 1);
    }
  for (int r = 0; r < file.stages; ++r) {
    const auto& row = rows[static_cast<std::size_t>(r)];
    check_phases(row, r, file.stages, file.virtual_stages, file.micro_batches, name);
    file.schedule.push_back(with_transfers(row, r, file.stages, file.virtual_stages));
  }
  check_runs(file, name);
  return file;
}

void validate_schedule_file(const RunConfig& c) {
  if (c.schedule_file.empty()) return;
  const ScheduleFile file = load_schedule_file(c.schedule_file);
  const std::string named = "{schedule_file} " + c.schedule_file;
  const auto require = [](bool ok, const std::string& en, const std::string& zh) {
    if (!ok) throw FieldError(en, zh);
  };
  require(file.stages == c.layout.pp(),
          named + " has " + std::to_string(file.stages) + " rows (ranks), but {pp} is " + std::to_string(c.layout.pp()),
          named + " 有 " + std::to_string(file.stages) + " 行（rank），但 {pp} 为 " + std::to_string(c.layout.pp()));
  require(file.micro_batches == c.micro_batches,
          named + " runs " + std::to_string(file.micro_batches) + " micro-batches, but {micro_batches} is " +
              std::to_string(c.micro_batches),
          named + " 运行 " + std::to_string(file.micro_batches) + " 个微批次，但 {micro_batches} 为 " +
              std::to_string(c.micro_batches));
  // A stage holds the file's chunks (stage c·p + r on rank r), as interleaved 1F1B's: the
  // trainer splits the layers by {virtual_stages} (run_config.cpp checks they divide).
  const std::string chunks = std::to_string(file.virtual_stages), given = std::to_string(c.virtual_stages);
  require(file.virtual_stages == c.virtual_stages,
          named + " puts " + chunks + " model chunks on each rank, but {virtual_stages} is " + given + ": give " +
              "{virtual_stages} " + chunks,
          named + " 在每个 rank 上放 " + chunks + " 个模型块，但 {virtual_stages} 为 " + given + "：请给出 " +
              "{virtual_stages} " + chunks);
  for (const auto& list : file.schedule)
    for (const auto& a : list)
      if (a.type == Type::weight_gradient) return validate_split_backward(c, named);
}

PipelineSchedule run_pipeline_schedule(const RunConfig& c) {
  if (!c.schedule_file.empty()) return load_schedule_file(c.schedule_file).schedule;
  return make_pipeline_schedule(c.schedule, c.layout.pp(), c.micro_batches, c.virtual_stages);
}

ScheduleFile load_schedule_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--schedule-file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return parse_schedule_csv(json ? json_schedule_as_csv(text.str(), path) : text.str(), path);
}

}  // namespace shardscope
