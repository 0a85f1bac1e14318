// SPDX-License-Identifier: GPL-3.0-or-later
// The run-config schema: one row for every field of RunConfig a user can set.
// A row says what the field is called on every surface (JSON key, CLI flag,
// the config panel's label in English and Chinese, the DeepSpeed JSON or
// accelerate YAML key that maps onto it), its type and range, its help text,
// whether a run saves it, and how to read and write it. The CLI parser and
// its --help, the metrics and recording metadata, lesson files, the config
// panel and validation all read this table: adding a field is one row here
// plus the code that uses the value.
//
// One table serves three surfaces: `train` (the rows of RunConfig), `estimate`
// (the CLI's memory and time estimator) and `planner` (the GUI's memory
// planner). A row says which surfaces show it; the estimator's two surfaces
// may read it with other limits (PlanFace: a planner sizes clusters the CPU
// trainer cannot run, dp up to 1,000,000 where a run takes 64). Rows only the
// estimator has (the micro-batch per GPU, offload, GPUs per node, ...) come
// after the RunConfig rows and have no get/set.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"
#include "core/error.h"

namespace shardscope {

// integer: whole numbers in [min, max]; number: finite reals in `range`;
// choice: one of `choices`; text: any string (a path, "RANK:STEP");
// list: integers, comma-separated on the command line, a JSON array elsewhere;
// toggle: a CLI switch without a value, true or false in JSON.
enum class FieldKind { integer, number, choice, text, list, toggle };

// always: in every run's metadata; optional: older recordings may lack it (the
// default applies); never: not saved (outputs, test hooks, CPU threads).
enum class Saved { always, optional, never };

struct Words {
  std::string_view en, zh;
  bool empty() const { return en.empty(); }
};

struct NumberRange {
  double min = 0.0, max = 0.0;
  bool min_open = false, max_open = false;  // (min, max] and so on
};

// The surfaces a row is on (RunField::surfaces, a bit mask).
namespace surface {
inline constexpr unsigned train = 1;     // `train`'s flags, the config panel, lesson files, metadata
inline constexpr unsigned estimate = 2;  // `estimate`'s flags
inline constexpr unsigned planner = 4;   // the memory planner's controls
inline constexpr unsigned plan = estimate | planner;
inline constexpr unsigned all = train | plan;
}  // namespace surface

// How a row reads on the estimator's surfaces (estimate, planner) where that
// differs from train's; an empty or zero member: as train's.
struct PlanFace {
  std::string_view flag, value_name;
  Words help;
  std::int64_t min = 0, max = 0;          // integer rows, when max > 0
  std::vector<std::string_view> choices;  // choice rows
  std::string_view default_text;          // --help's default; "-": none
};

struct RunField {
  std::string_view key;         // JSON key: metrics and recordings, lesson files; {key} in validation messages
  std::string_view flag;        // `train` flag, e.g. "--zero"; empty: not on the command line
  std::string_view value_name;  // in --help: N, X, FILE, gpipe|1f1b
  FieldKind kind = FieldKind::integer;
  Words label;  // the config panel's label; empty: the panel does not show it
  Words help;   // --help and the panel's tooltip
  std::int64_t min = 0, max = 0;                  // integer and list fields
  NumberRange range;                              // number fields
  std::vector<std::string_view> choices;          // choice fields
  std::string_view default_text;                  // --help's default when not get(RunConfig{}), e.g. "-1"
  std::string_view deepspeed;                     // DeepSpeed JSON key that sets it, if any
  std::string_view accelerate;                    // accelerate YAML key that sets it, if any
  Saved saved = Saved::always;
  std::string_view legacy;  // optional fields: what an older recording without the key meant (empty: the default)
  nlohmann::json (*get)(const RunConfig&) = nullptr;
  void (*set)(RunConfig&, const nlohmann::json&) = nullptr;  // the value has passed check_field_value
  unsigned surfaces = surface::train;
  PlanFace plan;  // on estimate and planner

  bool on(unsigned surface_bits) const { return (surfaces & surface_bits) != 0; }
};

// Every row of RunConfig (the train surface), in the order of `train --help` and of the metadata.
std::span<const RunField> run_fields();
// Every row: run_fields(), then the rows only the estimator's surfaces have.
std::span<const RunField> schema_fields();
// The rows on a surface (surface::estimate, ...), in the table's order, each as it reads there (field_on).
std::vector<RunField> fields_on(unsigned surface_bit);
// A row as it reads on one surface: on estimate and planner, PlanFace's flag,
// help, range, choices and default in place of train's.
RunField field_on(const RunField& field, unsigned surface_bit);
// The row of a RunConfig key (nullptr when there is none).
const RunField* find_run_field(std::string_view key);
// The row of a RunConfig key that must exist (a typo in the engine is a logic_error).
const RunField& run_field(std::string_view key);
// The row of any key, estimator-only rows included (nullptr when there is none).
const RunField* find_schema_field(std::string_view key);

// A value, or a combination of values, the schema refuses. The messages name
// fields as {key} (English and Chinese); text() puts the words of the surface
// that set the value in their place. what() names them by CLI flag.
class FieldError : public ConfigError {
 public:
  FieldError(std::string message_en, std::string message_zh);
  using Namer = std::function<std::string(std::string_view key)>;
  std::string text(const Namer& name, bool chinese = false) const;
  const std::string& message_en() const { return en_; }

 private:
  std::string en_, zh_;
};

// A value one source gives a row: the row's key, the value in the row's JSON
// type, and where it came from ("ds.json: zero_optimization.stage", "--dp").
struct SchemaValue {
  std::string key;
  nlohmann::json value;
  std::string from;
};

// The CLI's name of a key: its flag ("--zero", "--micro-batch"); a key without a row, as a flag.
std::string flag_of(std::string_view key);
// {key} placeholders replaced by `name(key)`.
std::string name_fields(std::string_view message, const FieldError::Namer& name);

// Throws FieldError naming the field when `value` has the wrong type or is out of range.
void check_field_value(const RunField& field, const nlohmann::json& value);
// A command-line value as JSON ("4" -> 4, "0,1" -> [0, 1]), then checked.
nlohmann::json field_value_from_text(const RunField& field, std::string_view text);
// check_field_value, then field.set.
void set_field(RunConfig& config, const RunField& field, const nlohmann::json& value);
// A value for --help's "(default: ...)" and the panel.
std::string field_value_text(const RunField& field, const nlohmann::json& value);

// The `train` flags that make `config` (on top of the defaults): every field
// with a flag whose value is not the default's, as "--flag" "value" (a set
// toggle as "--flag" alone). How the GUI starts a run as processes.
std::vector<std::string> run_config_flags(const RunConfig& config);

// Every field's value is in its row's range (the checks that do not need other fields).
void check_field_ranges(const RunConfig& config);

}  // namespace shardscope
