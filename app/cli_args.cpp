// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/did_you_mean.h"

namespace shardscope::cli {

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    throw UsageError(flag + ": '" + text + "' is not an integer");
  if (ec == std::errc::result_out_of_range || value < min || value > max)
    throw UsageError(flag + ": " + text + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                     "]");
  return value;
}

float parse_float(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) throw UsageError(flag + ": '" + text + "' is not a number");
  if (!std::isfinite(value) || std::fabs(value) > 3.0e38) throw UsageError(flag + ": " + text + " is not a finite number");
  return static_cast<float>(value);
}

void ArgParser::add_string(const std::string& flag, const std::string& value_name, const std::string& help,
                           std::string* out) {
  flags_.push_back({flag, value_name, help, true, [out](const std::string& v) { *out = v; },
                    out->empty() ? "" : *out});
}

void ArgParser::add_int(const std::string& flag, const std::string& help, std::int64_t* out, std::int64_t min,
                        std::int64_t max) {
  flags_.push_back({flag, "N", help, true, [=](const std::string& v) { *out = parse_int(flag, v, min, max); },
                    std::to_string(*out)});
}

void ArgParser::add_int(const std::string& flag, const std::string& help, int* out, int min, int max) {
  flags_.push_back({flag, "N", help, true,
                    [=](const std::string& v) { *out = static_cast<int>(parse_int(flag, v, min, max)); },
                    std::to_string(*out)});
}

void ArgParser::add_float(const std::string& flag, const std::string& help, float* out) {
  std::ostringstream def;
  def << *out;
  flags_.push_back({flag, "X", help, true, [=](const std::string& v) { *out = parse_float(flag, v); }, def.str()});
}

void ArgParser::add_switch(const std::string& flag, const std::string& help, bool* out) {
  flags_.push_back({flag, "", help, false, [out](const std::string&) { *out = true; }, ""});
}

void ArgParser::add_flag(const std::string& flag, const std::string& value_name, const std::string& help,
                         const std::string& default_text, std::function<void(const std::string&)> set) {
  flags_.push_back({flag, value_name, help, !value_name.empty(), std::move(set), default_text});
}

void ArgParser::add_positional(const std::string& name, const std::string& help, std::string* out) {
  positionals_.push_back({name, help, out});
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  std::size_t next_positional = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (arg.rfind("--", 0) != 0) {
      if (next_positional >= positionals_.size()) throw UsageError("unexpected argument '" + arg + "'");
      *positionals_[next_positional++].out = arg;
      continue;
    }
    std::string name = arg, value;
    bool has_inline_value = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_inline_value = true;
    }
    const Flag* flag = nullptr;
    for (const auto& f : flags_)
      if (f.name == name) flag = &f;
    if (flag == nullptr)
      throw UsageError("unknown flag '" + name + "'" + did_you_mean(name, flag_names()) + " (see " + command_ +
                       " --help)");
    if (flag->takes_value && !has_inline_value) {
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
      value = args[++i];
    }
    if (!flag->takes_value && has_inline_value) throw UsageError(name + " takes no value");
    flag->set(value);
  }
  if (next_positional < positionals_.size())
    throw UsageError("missing " + positionals_[next_positional].name + " (see " + command_ + " --help)");
  return true;
}

std::vector<std::string> ArgParser::flag_names() const {
  std::vector<std::string> names{"--help"};
  for (const auto& f : flags_) names.push_back(f.name);
  return names;
}

std::string ArgParser::help() const {
  std::ostringstream out;
  out << "Usage: " << command_ << " [flags]";
  for (const auto& p : positionals_) out << " " << p.name;
  out << "\n\n" << summary_ << "\n\n";
  for (const auto& p : positionals_) out << "  " << p.name << "\n      " << p.help << "\n";
  out << "Flags:\n";
  for (const auto& f : flags_) {
    std::string head = "  " + f.name + (f.takes_value ? " " + f.value_name : "");
    out << head << "\n      " << f.help;
    if (!f.default_text.empty()) out << " (default: " << f.default_text << ")";
    out << "\n";
  }
  out << "  --help\n      Show this help and exit.\n";
  return out.str();
}

std::string flag_argument(const std::vector<std::string>& args, const std::string& flag) {
  std::string value;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) value = args[i + 1];
    if (args[i].starts_with(flag + "=")) value = args[i].substr(flag.size() + 1);
  }
  return value;
}

bool flag_given(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(),
                     [&](const std::string& a) { return a == flag || a.starts_with(flag + "="); });
}

}  // namespace shardscope::cli
