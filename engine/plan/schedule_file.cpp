// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline schedules from CSV files (schedule_file.h).
#include "plan/schedule_file.h"

#include <algorithm>
#include <atomic>
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
#include "plan/zb_v_schedule.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

struct Cell {
  int virtual_stage = 0, micro_batch = 0;
  char type = 'F';  // F, B, I or W as written
  std::string text;
  int chunk = 0;  // the rank's model chunk that stage is (parse_schedule_csv)
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
               "action " + std::to_string(row.size()) + " '" + bounded_excerpt(field) +
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
void check_phases(const std::vector<Cell>& row, int rank, int stages, int chunks, int micro_batches, bool v_shape,
                  const std::string& name) {
  std::map<std::tuple<int, int, char>, int> at;  // (chunk, micro-batch, F / backward / W) -> position
  for (int i = 0; i < static_cast<int>(row.size()); ++i) {
    const Cell& c = row[static_cast<std::size_t>(i)];
    const std::string action = "action " + std::to_string(i) + " '" + c.text + "'";
    const char phase = c.type == 'I' ? 'B' : c.type;
    const int chunk = c.chunk;
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
    const bool has_w = at.contains({c.chunk, c.micro_batch, 'W'});
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
                 "micro-batch " + std::to_string(j) + " of stage " +
                     std::to_string(v_shape && chunk == 1 ? 2 * stages - 1 - rank : chunk * stages + rank) +
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
    const int chunk = c.chunk;
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

// The compute actions of a V file's rows, and their transfers as ZB-V's (zb_v_schedule.h).
PipelineSchedule v_shape_schedule(const std::vector<std::vector<Cell>>& rows, const std::string& name) {
  std::vector<std::vector<PipelineAction>> compute(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (const Cell& c : rows[r]) {
      PipelineAction a{c.type == 'F'   ? Type::forward
                       : c.type == 'W' ? Type::weight_gradient
                                       : Type::backward,
                       c.micro_batch, -1, static_cast<int>(r)};
      a.chunk = c.chunk;
      compute[r].push_back(a);
    }
  try {
    return with_v_transfers(compute);
  } catch (const std::logic_error& e) {
    throw ConfigError("--schedule-file " + name + ": " + e.what() + " (stage s is rank s)");
  }
}

// Whether rank r's stages are r and 2p - 1 - r (the V), with a stage 2p - 1 - r
// that round-robin placement would put elsewhere; else the chunk of each cell
// is stage / p (checked in parse_schedule_csv).
bool places_in_a_v(std::vector<std::vector<Cell>>& rows) {
  const int p = static_cast<int>(rows.size());
  bool v = false;
  for (int r = 0; r < p; ++r)
    for (const Cell& c : rows[static_cast<std::size_t>(r)]) {
      if (c.virtual_stage != r && c.virtual_stage != 2 * p - 1 - r) return false;
      v = v || (c.virtual_stage == 2 * p - 1 - r && 2 * p - 1 - r != p + r);
    }
  if (!v) return false;
  for (int r = 0; r < p; ++r)
    for (Cell& c : rows[static_cast<std::size_t>(r)]) c.chunk = c.virtual_stage == r ? 0 : 1;
  return true;
}

// The rank of a stuck action: the simulator names "stage S".
void check_runs(const ScheduleFile& file, const std::string& name) {
  try {
    simulate_pipeline_schedule(file.schedule, 1, 1, 0, 1, file.placement);
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
  std::vector<std::vector<Cell>> rows = read_rows(text, name);
  ScheduleFile file;
  file.stages = static_cast<int>(rows.size());
  const bool v_shape = places_in_a_v(rows);
  if (v_shape) file.placement = ChunkPlacement::v_shape;
  for (int r = 0; r < file.stages; ++r)
    for (Cell& c : rows[static_cast<std::size_t>(r)]) {
      if (!v_shape) c.chunk = c.virtual_stage / file.stages;
      if (!v_shape && c.virtual_stage % file.stages != r)
        refuse(name, r,
               "action '" + c.text + "': stage " + std::to_string(c.virtual_stage) + " is on rank " +
                   std::to_string(c.virtual_stage % file.stages) +
                   " (rank r holds stages r, p + r, 2p + r, ...; p = " + std::to_string(file.stages) + " rows)");
      file.virtual_stages = std::max(file.virtual_stages, c.chunk + 1);
      file.micro_batches = std::max(file.micro_batches, c.micro_batch + 1);
    }
  for (int r = 0; r < file.stages; ++r) {
    const auto& row = rows[static_cast<std::size_t>(r)];
    check_phases(row, r, file.stages, file.virtual_stages, file.micro_batches, v_shape, name);
    if (!v_shape) file.schedule.push_back(with_transfers(row, r, file.stages, file.virtual_stages));
  }
  if (v_shape) file.schedule = v_shape_schedule(rows, name);
  check_runs(file, name);
  return file;
}

void validate_schedule_file(const ScheduleFile& file, const RunConfig& c) {
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
  // A V file's layers are ZB-V's (plan/zb_v_schedule.h): it trains with {schedule} zb-v, and zb-v only with one.
  const bool v_file = file.placement == ChunkPlacement::v_shape, zb_v = c.schedule == PipelineScheduleKind::zb_v;
  require(v_file == zb_v,
          v_file ? named +
                       " places two chunks per rank in a V (rank r: stages r and 2p - 1 - r): give {schedule} zb-v, "
                       "whose layers are laid out so"
                 : named +
                       " places its chunks round-robin (rank r: stages r, p + r, ...), but {schedule} zb-v lays "
                       "the layers out in a V: give another {schedule}",
          v_file ? named +
                       " 在每个 rank 上把两个模型块排成 V 形（rank r：阶段 r 与 2p - 1 - r）：请给出 {schedule} zb-v，"
                       "它按此布置各层"
                 : named +
                       " 按轮转方式放置模型块（rank r：阶段 r、p + r……），但 {schedule} zb-v 把各层排成 V 形："
                       "请换用其他 {schedule}");
  const std::string chunks = std::to_string(file.virtual_stages), given = std::to_string(c.virtual_stages);
  require(v_file || file.virtual_stages == c.virtual_stages,
          named + " puts " + chunks + " model chunks on each rank, but {virtual_stages} is " + given + ": give " +
              "{virtual_stages} " + chunks,
          named + " 在每个 rank 上放 " + chunks + " 个模型块，但 {virtual_stages} 为 " + given + "：请给出 " +
              "{virtual_stages} " + chunks);
  for (const auto& list : file.schedule)
    for (const auto& a : list)
      if (a.type == Type::weight_gradient) return validate_split_backward(c, named);
}

void validate_schedule_file(const RunConfig& c) {
  if (!c.schedule_file.empty()) validate_schedule_file(load_schedule_file(c.schedule_file), c);
}

std::vector<std::string> schedule_csv_rows(const ScheduleFile& file) {
  const int p = file.stages;
  std::vector<std::string> rows;
  for (int r = 0; r < p; ++r) {
    const std::vector<PipelineAction>& list = file.schedule[static_cast<std::size_t>(r)];
    std::string row;
    for (const PipelineAction& a : list) {
      if (a.type != Type::forward && a.type != Type::backward && a.type != Type::weight_gradient) continue;
      const bool split =
          a.type == Type::backward && std::any_of(list.begin(), list.end(), [&](const auto& w) {
            return w.type == Type::weight_gradient && w.chunk == a.chunk && w.micro_batch == a.micro_batch;
          });
      const char type = a.type == Type::forward ? 'F' : a.type == Type::weight_gradient ? 'W' : split ? 'I' : 'B';
      const int stage = file.placement == ChunkPlacement::v_shape && a.chunk == 1 ? 2 * p - 1 - r : a.chunk * p + r;
      if (!row.empty()) row += ',';
      row += std::to_string(stage);  // appended piece by piece: GCC 12 warns (-Wrestrict) on the chained +
      row += type;
      row += std::to_string(a.micro_batch);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {
std::atomic<std::int64_t> reads{0};
}  // namespace

std::int64_t schedule_files_read() {
  return reads.load();
}

ScheduleFile load_schedule_file(const std::string& path) {
  ++reads;
  std::ifstream in(path);
  if (!in) throw ConfigError("--schedule-file " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return parse_schedule_csv(json ? json_schedule_as_csv(text.str(), path) : text.str(), path);
}

}  // namespace shardscope
