// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/run_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace shardscope {

const RunField* find_run_field(std::string_view key) {
  for (const RunField& field : run_fields())
    if (field.key == key) return &field;
  return nullptr;
}

const RunField& run_field(std::string_view key) {
  const RunField* field = find_run_field(key);
  if (field == nullptr) throw std::logic_error("run schema: no field \"" + std::string(key) + "\"");
  return *field;
}

const RunField* find_schema_field(std::string_view key) {
  for (const RunField& field : schema_fields())
    if (field.key == key) return &field;
  return nullptr;
}

RunField field_on(const RunField& field, unsigned surface_bit) {
  if ((surface_bit & surface::plan) == 0) return field;
  RunField out = field;
  const PlanFace& plan = field.plan;
  if (!plan.flag.empty()) out.flag = plan.flag;
  if (!plan.value_name.empty()) out.value_name = plan.value_name;
  if (!plan.help.empty()) out.help = plan.help;
  if (plan.max > 0) out.min = plan.min, out.max = plan.max;
  if (!plan.choices.empty()) out.choices = plan.choices;
  if (!plan.default_text.empty()) out.default_text = plan.default_text;
  return out;
}

std::vector<RunField> fields_on(unsigned surface_bit) {
  std::vector<RunField> out;
  for (const RunField& field : schema_fields())
    if (field.on(surface_bit)) out.push_back(field_on(field, surface_bit));
  return out;
}

std::string flag_of(std::string_view key) {
  const RunField* field = find_schema_field(key);
  if (field != nullptr && !field->flag.empty()) return std::string(field->flag);
  std::string flag = "--" + std::string(key);  // a key without a flag: --global-batch, ...
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string name_fields(std::string_view message, const FieldError::Namer& name) {
  std::string out;
  for (std::size_t at = 0; at < message.size();) {
    const std::size_t open = message.find('{', at);
    const std::size_t close = open == std::string_view::npos ? open : message.find('}', open);
    if (close == std::string_view::npos) {
      out += message.substr(at);
      break;
    }
    out += message.substr(at, open - at);
    out += name(message.substr(open + 1, close - open - 1));
    at = close + 1;
  }
  return out;
}

FieldError::FieldError(std::string message_en, std::string message_zh)
    : ConfigError(name_fields(message_en, flag_of)), en_(std::move(message_en)), zh_(std::move(message_zh)) {}

std::string FieldError::text(const Namer& name, bool chinese) const {
  return name_fields(chinese && !zh_.empty() ? zh_ : en_, name);
}

namespace {

std::string placeholder(const RunField& field) {
  return "{" + std::string(field.key) + "}";
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string join(const std::vector<std::string_view>& words) {
  std::string out;
  for (std::string_view w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

// "(0, 10)", "[0, 1]", or "at least 0" when there is no upper end.
std::string range_text(const NumberRange& r, bool chinese) {
  if (std::isinf(r.max)) {
    if (chinese) return (r.min_open ? "大于 " : "至少为 ") + number_text(r.min);
    return (r.min_open ? "more than " : "at least ") + number_text(r.min);
  }
  return (r.min_open ? "(" : "[") + number_text(r.min) + ", " + number_text(r.max) + (r.max_open ? ")" : "]");
}

[[noreturn]] void wrong_type(const RunField& field, const char* en, const char* zh) {
  throw FieldError(placeholder(field) + " must be " + en, placeholder(field) + " 必须是" + zh);
}

void check_integer(const RunField& field, const nlohmann::json& value) {
  if (!value.is_number_integer()) wrong_type(field, "an integer", "整数");
  const bool unsigned_big = value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX;
  const std::int64_t v = unsigned_big ? INT64_MAX : value.get<std::int64_t>();
  if (unsigned_big || v < field.min || v > field.max) {
    const std::string got = unsigned_big ? std::to_string(value.get<std::uint64_t>()) : std::to_string(v);
    const std::string range = "[" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    throw FieldError(placeholder(field) + ": " + got + " is out of range " + range,
                     placeholder(field) + "：" + got + " 超出范围 " + range);
  }
}

void check_number(const RunField& field, const nlohmann::json& value) {
  if (!value.is_number()) wrong_type(field, "a number", "数字");
  const double v = value.get<double>();
  const NumberRange& r = field.range;
  const bool ok = std::isfinite(v) && (r.min_open ? v > r.min : v >= r.min) && (r.max_open ? v < r.max : v <= r.max);
  if (!ok)
    throw FieldError(placeholder(field) + " must be " + (std::isinf(r.max) ? "" : "in ") + range_text(r, false) +
                         " (got " + number_text(v) + ")",
                     placeholder(field) + " 必须" + (std::isinf(r.max) ? "" : "在 ") + range_text(r, true) +
                         (std::isinf(r.max) ? "" : " 内") + "（实际为 " + number_text(v) + "）");
}

void check_choice(const RunField& field, const nlohmann::json& value) {
  if (!value.is_string()) wrong_type(field, "a string", "字符串");
  const std::string v = value.get<std::string>();
  for (std::string_view choice : field.choices)
    if (choice == v) return;
  throw FieldError(placeholder(field) + ": '" + v + "' is not one of " + join(field.choices),
                   placeholder(field) + "：'" + v + "' 不是 " + join(field.choices) + " 之一");
}

void check_list(const RunField& field, const nlohmann::json& value) {
  if (!value.is_array() || value.empty()) wrong_type(field, "a list of integers", "整数列表");
  for (const auto& item : value) check_integer(field, item);
}

}  // namespace

void check_field_value(const RunField& field, const nlohmann::json& value) {
  switch (field.kind) {
    case FieldKind::integer:
      return check_integer(field, value);
    case FieldKind::number:
      return check_number(field, value);
    case FieldKind::choice:
      return check_choice(field, value);
    case FieldKind::text:
      if (!value.is_string()) wrong_type(field, "a string", "字符串");
      return;
    case FieldKind::list:
      return check_list(field, value);
    case FieldKind::toggle:
      if (!value.is_boolean()) wrong_type(field, "true or false", "true 或 false");
      return;
  }
}

namespace {

nlohmann::json integer_from_text(const RunField& field, std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    throw FieldError(placeholder(field) + ": '" + std::string(text) + "' is not an integer",
                     placeholder(field) + "：'" + std::string(text) + "' 不是整数");
  if (ec == std::errc::result_out_of_range) {
    const std::string range = "[" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    throw FieldError(placeholder(field) + ": " + std::string(text) + " is out of range " + range,
                     placeholder(field) + "：" + std::string(text) + " 超出范围 " + range);
  }
  return value;
}

nlohmann::json number_from_text(const RunField& field, std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size())
    throw FieldError(placeholder(field) + ": '" + copy + "' is not a number",
                     placeholder(field) + "：'" + copy + "' 不是数字");
  if (!std::isfinite(value) || std::fabs(value) > 3.0e38)
    throw FieldError(placeholder(field) + ": " + copy + " is not a finite number",
                     placeholder(field) + "：" + copy + " 不是有限的数");
  if (value != 0.0 && static_cast<float>(value) == 0.0f)  // the run keeps a float: 1e-50 became 0, "got 0"
    throw FieldError(placeholder(field) + ": " + copy + " is too small for a 32-bit float (it would be 0)",
                     placeholder(field) + "：" + copy + " 太小，32 位浮点数存不下（会变成 0）");
  return value;
}

nlohmann::json list_from_text(const RunField& field, std::string_view text) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    list.push_back(integer_from_text(field, text.substr(at, comma - at)));
    at = comma + 1;
  }
  return list;
}

}  // namespace

nlohmann::json field_value_from_text(const RunField& field, std::string_view text) {
  nlohmann::json value;
  switch (field.kind) {
    case FieldKind::integer:
      value = integer_from_text(field, text);
      break;
    case FieldKind::number:
      value = number_from_text(field, text);
      break;
    case FieldKind::list:
      value = list_from_text(field, text);
      break;
    case FieldKind::toggle:
      value = text.empty() || text == "true";
      break;
    case FieldKind::choice:
    case FieldKind::text:
      value = std::string(text);
      break;
  }
  check_field_value(field, value);
  return value;
}

void set_field(RunConfig& config, const RunField& field, const nlohmann::json& value) {
  check_field_value(field, value);
  field.set(config, value);
}

std::string field_value_text(const RunField& field, const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (field.kind == FieldKind::list) {
    std::string out;
    for (const auto& item : value) {  // appended in steps: GCC 12 warns falsely (-Wrestrict) on "," + string&&
      if (!out.empty()) out += ',';
      out += item.dump();
    }
    return out;
  }
  if (value.is_number_float()) return number_text(value.get<double>());
  return value.dump();
}

std::vector<std::string> run_config_flags(const RunConfig& config) {
  const RunConfig defaults;
  std::vector<std::string> flags;
  for (const RunField& field : run_fields()) {
    const nlohmann::json value = field.get(config);
    if (field.flag.empty() || value == field.get(defaults)) continue;
    flags.emplace_back(field.flag);
    if (field.kind == FieldKind::toggle) continue;  // only `true` differs from the default
    // Numbers as JSON writes them: the shortest text that reads back to the same double.
    flags.push_back(value.is_number_float() ? value.dump() : field_value_text(field, value));
  }
  return flags;
}

void check_field_ranges(const RunConfig& config) {
  for (const RunField& field : run_fields()) check_field_value(field, field.get(config));
}

}  // namespace shardscope
