// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope_fuzz: a small mutation fuzzer for ShardScope's parsers (GCC has
// no libFuzzer). For one target it replays the regression corpus
// (tests/fuzz/regressions/<target>/, every input that once failed), then the
// seed corpus (tests/fuzz/corpus/<target>/), then runs mutations of those for
// a bounded time or number of cases, and prints
//   fuzz <target>: N cases, F failures
// It exits 1 when any case failed: threw something other than ConfigError or
// FormatError (saved to <out>/failure-<target>-<hash>.bin), or crashed, hung
// or drew a sanitizer report (saved by crash_guard.cpp before dying).
//
//   shardscope_fuzz TARGET [--seconds S] [--cases N] [--seed N] [--out DIR] [--hold-back KIND,...]
//   shardscope_fuzz TARGET FILE...      replays only these files, saying how each ended
// Defaults from the environment: SHARDSCOPE_FUZZ_SECONDS (20), SHARDSCOPE_FUZZ_CASES
// (no limit), SHARDSCOPE_FUZZ_SEED (1), SHARDSCOPE_FUZZ_OUT (./fuzz-failures),
// SHARDSCOPE_FUZZ_CASE_TIMEOUT (10 s of CPU for one case), SHARDSCOPE_FUZZ_HOLD_BACK (none).
#include <cxxabi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/error.h"
#include "crash_guard.h"
#include "fuzz_targets.h"

namespace fs = std::filesystem;
using namespace shardscope;
using namespace shardscope::fuzz;

namespace {

constexpr std::size_t kMaxInputBytes = 1 << 20;

struct Options {
  const FuzzTarget* target = nullptr;
  double seconds = 20;
  std::uint64_t max_cases = UINT64_MAX;
  std::uint64_t seed = 1;
  unsigned case_timeout_s = 10;
  std::string out_dir = "fuzz-failures";
  std::string held_back;           // mutation kinds not made (Mutator::hold_back)
  std::vector<std::string> files;  // replay only these
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "shardscope_fuzz: %s\nusage: shardscope_fuzz TARGET [--seconds S] [--cases N] [--seed N] "
               "[--out DIR] [--hold-back KIND,...] [FILE...]\ntargets:",
               problem.c_str());
  for (const FuzzTarget& t : fuzz_targets()) std::fprintf(stderr, " %.*s", int(t.name.size()), t.name.data());
  std::fprintf(stderr, "\n");
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  if (argc < 2) usage("which target?");
  Options o;
  o.target = find_fuzz_target(argv[1]);
  if (o.target == nullptr) usage(std::string("unknown target ") + argv[1]);
  o.seconds = std::stod(env_or("SHARDSCOPE_FUZZ_SECONDS", "20"));
  o.max_cases = std::stoull(env_or("SHARDSCOPE_FUZZ_CASES", std::to_string(UINT64_MAX)));
  o.seed = std::stoull(env_or("SHARDSCOPE_FUZZ_SEED", "1"));
  o.case_timeout_s = static_cast<unsigned>(std::stoul(env_or("SHARDSCOPE_FUZZ_CASE_TIMEOUT", "10")));
  o.out_dir = env_or("SHARDSCOPE_FUZZ_OUT", o.out_dir);
  o.held_back = env_or("SHARDSCOPE_FUZZ_HOLD_BACK", "");
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--seconds" && has_value)
      o.seconds = std::stod(argv[++i]);
    else if (arg == "--cases" && has_value)
      o.max_cases = std::stoull(argv[++i]);
    else if (arg == "--seed" && has_value)
      o.seed = std::stoull(argv[++i]);
    else if (arg == "--out" && has_value)
      o.out_dir = argv[++i];
    else if (arg == "--hold-back" && has_value)
      o.held_back = argv[++i];
    else if (arg.rfind("--", 0) == 0)
      usage("unknown option " + arg);
    else
      o.files.push_back(arg);
  }
  try {
    Mutator(0, {}, {}, 0).hold_back(o.held_back);
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
  return o;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The files of a corpus folder in name order (dot files skipped), so a run is reproducible.
std::vector<std::string> read_corpus(const fs::path& dir) {
  std::vector<fs::path> paths;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> inputs;
  for (const auto& path : paths) inputs.push_back(read_file(path));
  return inputs;
}

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string text = status == 0 && name != nullptr ? name : type.name();
  std::free(name);
  return text;
}

// Runs cases, counts them, and keeps one input per kind of failure.
class Runner {
 public:
  explicit Runner(const Options& options) : options_(options) {}

  // What the case ended with: "accepted", the refusal's message, or the failure.
  std::string run(const std::string& input) {
    ++cases_;
    std::string outcome = "accepted", failure;
    arm_crash_guard(input);
    try {
      options_.target->run(input);
    } catch (const ConfigError& e) {
      outcome = std::string("refused (ConfigError): ") + e.what();
    } catch (const FormatError& e) {
      outcome = std::string("refused (FormatError): ") + e.what();
    } catch (const std::exception& e) {
      failure = type_name(typeid(e)) + ": " + e.what();
    } catch (...) {
      failure = "an exception of an unknown type";
    }
    disarm_crash_guard();
    if (failure.empty()) return outcome;
    if (held_back(failure)) {
      ++held_back_;
      return "HELD BACK: " + failure;
    }
    report(input, failure);
    return "FAILURE: " + failure;
  }

  std::uint64_t cases() const { return cases_; }
  std::uint64_t failures() const { return failures_; }
  std::uint64_t held_back() const { return held_back_; }

 private:
  // A number past a double's range is a mutation held back with
  // "overflowing_numbers"; nlohmann's parser reports it as out_of_range.406,
  // however the mutations spelled it (1e400, 7681e308).
  bool held_back(const std::string& failure) const {
    return options_.held_back.find("overflowing_numbers") != std::string::npos &&
           failure.find("[json.exception.out_of_range.406]") != std::string::npos;
  }

  void report(const std::string& input, const std::string& failure) {
    ++failures_;
    // One report per kind: the type and the message without its numbers.
    std::string kind = failure.substr(0, 80);
    kind.erase(std::remove_if(kind.begin(), kind.end(), [](char c) { return c >= '0' && c <= '9'; }), kind.end());
    if (!kinds_.insert(kind).second) return;
    const std::string name =
        options_.out_dir + "/failure-" + std::string(options_.target->name) + "-" + input_hash(input) + ".bin";
    std::ofstream(name, std::ios::binary) << input;
    std::fprintf(stderr, "fuzz %.*s: FAILURE on case %llu: %s\n  input (%zu bytes) saved to %s\n",
                 int(options_.target->name.size()), options_.target->name.data(),
                 static_cast<unsigned long long>(cases_), failure.substr(0, 400).c_str(), input.size(), name.c_str());
  }

  const Options& options_;
  std::uint64_t cases_ = 0, failures_ = 0, held_back_ = 0;
  std::set<std::string> kinds_;
};

// A memory limit in plain builds, so an allocation sized by the input fails
// (std::bad_alloc, a failure) instead of taking the machine's memory. The
// sanitizers reserve terabytes of address space and have their own limits.
void limit_memory() {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const rlim_t limit = rlim_t{4} << 30;
  rlimit current{};
  if (::getrlimit(RLIMIT_AS, &current) == 0 && (current.rlim_cur == RLIM_INFINITY || current.rlim_cur > limit)) {
    current.rlim_cur = limit;
    ::setrlimit(RLIMIT_AS, &current);
  }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const std::string name(options.target->name);
  fs::create_directories(options.out_dir);
  install_crash_guard(name, options.out_dir, options.case_timeout_s);
  limit_memory();
  Runner runner(options);
  const auto start = std::chrono::steady_clock::now();

  if (!options.files.empty()) {  // replay these files only
    for (const auto& file : options.files)
      std::printf("%s: %s\n", file.c_str(), runner.run(read_file(file)).substr(0, 300).c_str());
  } else {
    const fs::path root = SHARDSCOPE_FUZZ_DIR;
    const std::vector<std::string> regressions = read_corpus(root / "regressions" / name);
    std::vector<std::string> pool = read_corpus(root / "corpus" / name);
    if (pool.empty()) usage("no seed inputs in " + (root / "corpus" / name).string());
    const std::size_t seeds = pool.size();
    for (const auto& input : regressions) runner.run(input);
    for (const auto& input : pool) runner.run(input);
    pool.insert(pool.end(), regressions.begin(), regressions.end());

    Mutator mutator(options.seed ^ std::stoull(input_hash(name), nullptr, 16), options.target->dictionary(),
                    options.target->length_field, kMaxInputBytes);
    for (const auto& input : pool) mutator.learn_tokens(input);
    mutator.hold_back(options.held_back);
    const auto deadline = start + std::chrono::duration<double>(options.seconds);
    std::string input;
    while (runner.cases() < options.max_cases && std::chrono::steady_clock::now() < deadline) {
      // Mostly a fresh mutation of a corpus input; sometimes the last input mutated again.
      const bool chain = !input.empty() && mutator.rng().one_in(4);
      input = mutator.mutate(chain ? input : pool[mutator.rng().below(pool.size())], pool);
      runner.run(input);
    }
    std::printf("fuzz %s: %zu regression inputs and %zu seeds replayed, seed %llu%s%s\n", name.c_str(),
                regressions.size(), seeds, static_cast<unsigned long long>(options.seed),
                options.held_back.empty() ? "" : ", held back: ", options.held_back.c_str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (runner.held_back() > 0)
    std::printf(
        "fuzz %s: %llu cases threw out_of_range.406 (a number past a double's range: held back), "
        "not counted as failures\n",
        name.c_str(), static_cast<unsigned long long>(runner.held_back()));
  std::printf("fuzz %s: %llu cases, %llu failures (%.1f s)\n", name.c_str(),
              static_cast<unsigned long long>(runner.cases()), static_cast<unsigned long long>(runner.failures()),
              seconds);
  return runner.failures() == 0 ? 0 : 1;
}
