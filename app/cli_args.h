// SPDX-License-Identifier: GPL-3.0-or-later
// A small, strict command-line parser: every flag is declared with its help
// text (so --help documents every flag), values are parsed whole (no "12abc"),
// and every mistake is a UsageError that names the flag.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  void add_string(const std::string& flag, const std::string& value_name, const std::string& help, std::string* out);
  void add_int(const std::string& flag, const std::string& help, std::int64_t* out, std::int64_t min,
               std::int64_t max);
  void add_int(const std::string& flag, const std::string& help, int* out, int min, int max);
  void add_float(const std::string& flag, const std::string& help, float* out);
  void add_switch(const std::string& flag, const std::string& help, bool* out);
  // A flag whose value `set` parses (throwing UsageError or ConfigError naming the flag).
  void add_flag(const std::string& flag, const std::string& value_name, const std::string& help,
                const std::string& default_text, std::function<void(const std::string&)> set);
  // A positional argument (in order of declaration).
  void add_positional(const std::string& name, const std::string& help, std::string* out);

  // Throws UsageError; returns false if --help was given (help already printed).
  bool parse(const std::vector<std::string>& args);
  std::string help() const;

 private:
  std::vector<std::string> flag_names() const;  // for "did you mean"

  struct Flag {
    std::string name, value_name, help;
    bool takes_value;
    std::function<void(const std::string&)> set;
    std::string default_text;
  };
  struct Positional {
    std::string name, help;
    std::string* out;
  };
  std::string command_, summary_;
  std::vector<Flag> flags_;
  std::vector<Positional> positionals_;
};

// Strict conversions; throw UsageError naming `flag`.
std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t min, std::int64_t max);
float parse_float(const std::string& flag, const std::string& text);
// The value `flag` has in raw arguments ("--flag V" or "--flag=V"), read before
// (or without) parsing them: the last one, as the parser takes; empty if absent.
std::string flag_argument(const std::vector<std::string>& args, const std::string& flag);
// Whether `flag` is on the command line ("--flag V", "--flag=V" or a switch).
bool flag_given(const std::vector<std::string>& args, const std::string& flag);

}  // namespace shardscope::cli
