// SPDX-License-Identifier: GPL-3.0-or-later
// The code's size limits (docs/STYLE: small files, functions under ~80 lines):
//   - no source file under engine/, app/ or ui/ over 600 lines;
//   - no function in engine/, app/ or ui/ over 80 lines (Universal Ctags finds them,
//     CUDA kernels included; a lambda counts within the function around it).
// Today's offenders are listed in tests/source_limits_allowlist.txt, and that
// list may only shrink: the test fails on a new offender, on a listed one that
// grew past its listed length, and on a listed one that is no longer an
// offender (its line must go).
//
// Usage: test_source_limits SOURCE_DIR ALLOWLIST
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kMaxFileLines = 600;
constexpr int kMaxFunctionLines = 80;
const std::vector<std::string> kFileDirs = {"engine", "app", "ui"};
const std::vector<std::string> kFunctionDirs = {"engine", "app", "ui"};
const std::set<std::string> kSourceExtensions = {".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh", ".S"};
const std::string kFileEntry = "(file)";  // the "function" of an allowlist line about a whole file

// One measured thing: a file (function == kFileEntry) or a function, by path and qualified name.
struct Key {
  std::string path;
  std::string function;
  auto operator<=>(const Key&) const = default;
};

std::string describe(const Key& key) {
  return key.path + ":" + key.function;
}

struct Output {
  int status = -1;  // the exit code, or -1 when the command did not exit normally
  std::string text;
};

Output run_command(const std::string& command) {
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 65536> chunk{};
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) out.text.append(chunk.data(), n);
  const int wait_status = pclose(pipe);
  if (wait_status != -1 && WIFEXITED(wait_status)) out.status = WEXITSTATUS(wait_status);
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

[[noreturn]] void fail_setup(const std::string& message) {
  std::cerr << "test_source_limits: " << message << "\n";
  std::exit(1);
}

// Universal Ctags, as Debian installs it (ctags-universal; `ctags` may be another program).
std::string find_ctags() {
  const Output found = run_command("command -v ctags-universal || command -v ctags");
  std::string path = found.text.substr(0, found.text.find('\n'));
  if (found.status != 0 || path.empty())
    fail_setup("ctags not found: run scripts/install-deps.sh (it installs Universal Ctags, universal-ctags)");
  const Output version = run_command(shell_quote(path) + " --version 2>&1");
  if (version.text.find("Universal Ctags") == std::string::npos)
    fail_setup(path + " is not Universal Ctags: run scripts/install-deps.sh (it installs universal-ctags)");
  return path;
}

// "shardscope::__anon7797a67c0111::load" -> "shardscope::(anonymous)::load": ctags' hashes are not names.
std::string readable_name(std::string name) {
  static const std::regex anonymous("__anon[0-9a-f]+");
  name = std::regex_replace(name, anonymous, "(anonymous)");
  std::erase(name, ' ');  // "operator []" -> "operator[]": allowlist fields are separated by spaces
  return name;
}

// The longest function of each path and qualified name (overloads share one entry).
std::map<Key, int> measure_functions(const std::string& ctags, const std::string& source_dir) {
  std::string command = "cd " + shell_quote(source_dir) + " && " + shell_quote(ctags) +
                        " -R --sort=no --languages=C++,CUDA --kinds-C++=f --kinds-CUDA=f --fields=+ne"
                        " --output-format=json -D '__launch_bounds__(x)=' -f -";
  for (const auto& dir : kFunctionDirs) command += " " + dir;
  const Output out = run_command(command);
  if (out.status != 0) fail_setup("ctags failed (exit " + std::to_string(out.status) + "): " + command);
  std::map<Key, int> lengths;
  std::istringstream lines(out.text);
  for (std::string line; std::getline(lines, line);) {
    const auto tag = nlohmann::json::parse(line, nullptr, false);
    if (tag.is_discarded()) fail_setup("ctags wrote a line that is not JSON: " + line);
    if (tag.value("_type", "") != "tag" || tag.value("kind", "") != "function") continue;
    if (!tag.contains("end")) fail_setup("ctags gave no end line for " + tag.dump());
    const bool lambda = tag.value("name", "").starts_with("__anon");
    if (lambda && tag.value("scopeKind", "") == "function") continue;  // counted in the function around it
    const std::string scope = tag.value("scope", "");
    const std::string name = lambda ? "(lambda)" : tag.value("name", "");
    const Key key{tag.value("path", ""), readable_name(scope.empty() ? name : scope + "::" + name)};
    const int length = tag.value("end", 0) - tag.value("line", 0) + 1;
    lengths[key] = std::max(lengths[key], length);
  }
  return lengths;
}

int count_lines(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  int lines = 0;
  char last = '\n';
  for (char c; in.get(c); last = c) lines += c == '\n';
  return lines + (last != '\n');  // a last line without its newline still counts
}

std::map<Key, int> measure_files(const std::string& source_dir) {
  std::map<Key, int> lengths;
  for (const auto& dir : kFileDirs) {
    const std::filesystem::path root = std::filesystem::path(source_dir) / dir;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || !kSourceExtensions.contains(entry.path().extension().string())) continue;
      const std::string path = std::filesystem::relative(entry.path(), source_dir).generic_string();
      lengths[{path, kFileEntry}] = count_lines(entry.path());
    }
  }
  return lengths;
}

// Lines "path function lines"; '#' starts a comment line.
std::map<Key, int> read_allowlist(const std::string& file) {
  std::ifstream in(file);
  if (!in) fail_setup("cannot read the allowlist " + file);
  std::map<Key, int> allowed;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    std::istringstream fields(line);
    Key key;
    int lines = 0;
    std::string extra;
    if (!(fields >> key.path >> key.function >> lines) || (fields >> extra) || lines <= 0)
      fail_setup(file + ":" + std::to_string(number) + ": expected \"path function lines\", got \"" + line + "\"");
    if (!allowed.emplace(key, lines).second) fail_setup(file + ":" + std::to_string(number) + ": listed twice");
  }
  return allowed;
}

// Every way the measured code and the allowlist disagree, one line each.
std::vector<std::string> compare(const std::map<Key, int>& measured, const std::map<Key, int>& allowed) {
  std::vector<std::string> problems;
  for (const auto& [key, lines] : measured) {
    const int limit = key.function == kFileEntry ? kMaxFileLines : kMaxFunctionLines;
    if (lines <= limit) continue;
    const auto listed = allowed.find(key);
    const std::string what = describe(key) + ":" + std::to_string(lines) + " lines (limit " + std::to_string(limit);
    if (listed == allowed.end())
      problems.push_back("new offender:  " + what + "); split it, do not list it");
    else if (lines > listed->second)
      problems.push_back("grew:          " + what + ", allowlisted at " + std::to_string(listed->second) + ")");
    else if (lines < listed->second)
      std::cout << "note: " << what << ") is shorter than its allowlisted " << listed->second
                << "; lower its line in the allowlist\n";
  }
  for (const auto& [key, lines] : allowed) {
    const int limit = key.function == kFileEntry ? kMaxFileLines : kMaxFunctionLines;
    const auto found = measured.find(key);
    if (found == measured.end())
      problems.push_back("not found:     " + describe(key) + " (allowlisted at " + std::to_string(lines) +
                         "); remove its line from the allowlist");
    else if (found->second <= limit)
      problems.push_back("fixed:         " + describe(key) + ":" + std::to_string(found->second) + " lines (limit " +
                         std::to_string(limit) + "); remove its line from the allowlist");
  }
  return problems;
}

// A ctags that reads no CUDA (or nothing at all) would pass every check: make sure it measured both.
void check_coverage(const std::map<Key, int>& functions) {
  std::size_t cpp = 0, cuda = 0;
  for (const auto& [key, lines] : functions) (key.path.ends_with(".cu") || key.path.ends_with(".cuh") ? cuda : cpp)++;
  if (cpp < 100) fail_setup("ctags found only " + std::to_string(cpp) + " C++ functions; is it Universal Ctags?");
  if (cuda == 0) fail_setup("ctags found no function in the .cu files; it needs a CUDA parser (Universal Ctags 5.9)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) fail_setup("usage: test_source_limits SOURCE_DIR ALLOWLIST");
  const std::string source_dir = argv[1], allowlist = argv[2];
  std::map<Key, int> measured = measure_functions(find_ctags(), source_dir);
  check_coverage(measured);
  const std::size_t function_count = measured.size();
  measured.merge(measure_files(source_dir));
  const std::vector<std::string> problems = compare(measured, read_allowlist(allowlist));
  if (!problems.empty()) {
    std::cout << "Size limits: files <= " << kMaxFileLines
              << " lines (engine/, app/, ui/), functions <= " << kMaxFunctionLines
              << " lines (engine/, app/); allowlist " << allowlist << "\n";
    for (const auto& problem : problems) std::cout << "  " << problem << "\n";
    return 1;
  }
  std::cout << "Size limits kept: " << measured.size() - function_count << " files, " << function_count
            << " functions measured\n";
  return 0;
}
