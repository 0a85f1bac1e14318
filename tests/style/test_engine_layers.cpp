// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's folders import each other in one direction only: the test reads
// every `#include "folder/..."` under engine/ and fails on a circle between
// folders (e.g. train -> estimate -> train), printing the circle. It also
// checks that nothing under engine/ includes a Qt header, and that nothing
// under ui/ includes the engine's compute or communication layers (ops/,
// parallel/): the views read events and the plan, never the runtime.
//
// Usage: test_engine_layers SOURCE_DIR
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: test_engine_layers SOURCE_DIR\n";
    return 2;
  }
  const fs::path engine = fs::path(argv[1]) / "engine";
  const std::regex include_line(R"(^\s*#\s*include\s*["<]([A-Za-z_]+)/)");
  std::map<std::string, std::set<std::string>> imports;  // folder -> folders it includes
  std::map<std::pair<std::string, std::string>, std::string> example;  // (from, to) -> a file that does it
  int failures = 0, files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(engine)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
    ++files;
    const std::string folder = fs::relative(entry.path(), engine).begin()->string();
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string to = m[1];
      if (to.rfind("Qt", 0) == 0) {  // <QtCore/...>, <QtWidgets/...>
        std::cerr << "Qt in the engine: " << fs::relative(entry.path(), argv[1]).string() << ": " << line << "\n";
        ++failures;
      }
      if (to == folder || !fs::is_directory(engine / to)) continue;  // same folder, or a system/library header
      imports[folder].insert(to);
      example.emplace(std::make_pair(folder, to), fs::relative(entry.path(), argv[1]).string());
    }
  }
  if (files < 50) {
    std::cerr << "only " << files << " engine sources found under " << engine << "\n";
    return 1;
  }
  // Depth-first search for a back edge.
  std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
  std::vector<std::string> path;
  std::set<std::string> reported;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    for (const std::string& to : imports[f]) {
      if (state[to] == 1) {
        std::string circle;
        auto it = std::find(path.begin(), path.end(), to);
        for (auto p = it; p != path.end(); ++p) {
          const std::string& next = p + 1 != path.end() ? *(p + 1) : to;
          circle += *p + " -> " + next + " (" + example[{*p, next}] + ")\n";
        }
        if (reported.insert(circle).second) {
          std::cerr << "import circle between engine folders:\n" << circle;
          ++failures;
        }
      } else if (state[to] == 0) {
        visit(to);
      }
    }
    path.pop_back();
    state[f] = 2;
  };
  for (const auto& [folder, to] : imports)
    if (state[folder] == 0) visit(folder);
  for (const auto& [folder, to] : imports) {
    std::cout << folder << " ->";
    for (const std::string& t : to) std::cout << " " << t;
    std::cout << "\n";
  }
  const std::regex runtime_include(R"(^\s*#\s*include\s*"(ops|parallel)/)");
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(argv[1]) / "ui")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line))
      if (std::regex_search(line, runtime_include)) {
        std::cerr << "ui/ reaches into the runtime: " << fs::relative(entry.path(), argv[1]).string() << ": " << line
                  << "\n";
        ++failures;
      }
  }
  std::cout << (failures == 0 ? "engine folders: no import circle, no Qt; ui/ includes no ops/ or parallel/\n"
                              : "engine folders: see above\n");
  return failures == 0 ? 0 : 1;
}
