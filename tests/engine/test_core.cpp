// SPDX-License-Identifier: GPL-3.0-or-later
// Core pieces: the memory ledger, buffers, the thread pool, the RNG, the
// tokenizer, the dataset and MLM masking, the LR schedule, safetensors.
#include <sys/stat.h>

#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "core/buffer.h"
#include "core/checked_math.h"
#include "core/did_you_mean.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"
#include "core/memory_ledger.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "data/byte_tokenizer.h"
#include "data/default_corpus.h"
#include "data/masked_lm.h"
#include "data/text_dataset.h"
#include "engine/thread_cpu_timer.h"
#include "io/safetensors.h"
#include "train/lr_schedule.h"

using namespace shardscope;

class TestCore : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ledger_tracks_current_and_peak();
  void buffer_charges_and_releases_its_category();
  void buffer_allocates_from_the_ledgers_device_memory();
  void thread_pool_covers_every_item_once();
  void thread_pool_takes_jobs_from_two_callers();
  void rng_is_deterministic_and_normal();
  void byte_tokenizer_round_trips_utf8();
  void default_corpus_has_english_and_chinese();
  void dataset_splits_and_samples_deterministically();
  void dataset_rejects_missing_empty_and_short_files();
  void dataset_from_a_file_samples_as_from_text();
  void masked_lm_follows_80_10_10();
  void lr_schedule_warms_up_then_decays();
  void safetensors_round_trip();
  void safetensors_bad_files_name_the_problem();
  void checked_sizes_refuse_to_wrap();
  void json_text_names_the_place_of_every_error();
  void json_value_summary_is_short();
  void input_files_must_be_regular_files();
  void did_you_mean_finds_near_names_only();
};

void TestCore::ledger_tracks_current_and_peak() {
  MemoryLedger ledger;
  ledger.allocate(MemoryCategory::activations, 100);
  ledger.allocate(MemoryCategory::parameters, 40);
  ledger.release(MemoryCategory::activations, 100);
  ledger.allocate(MemoryCategory::activations, 30);
  QCOMPARE(ledger.current()[MemoryCategory::activations], 30);
  QCOMPARE(ledger.peak()[MemoryCategory::activations], 100);
  QCOMPARE(ledger.current_total(), 70);
  QCOMPARE(ledger.peak_total(), 140);
  QVERIFY_THROWS_EXCEPTION(std::logic_error, ledger.release(MemoryCategory::gradients, 1));
  QCOMPARE(std::string(memory_category_name(MemoryCategory::optimizer_states)), std::string("optimizer_states"));
}

void TestCore::buffer_charges_and_releases_its_category() {
  MemoryLedger ledger;
  {
    Buffer a(ledger, MemoryCategory::gradients, 1000);
    QCOMPARE(ledger.current()[MemoryCategory::gradients], 1000);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(a.data()) % 64, std::uintptr_t{0});
    QCOMPARE(a.floats()[249], 0.0f);  // zero-filled
    Buffer b = std::move(a);
    QCOMPARE(ledger.current()[MemoryCategory::gradients], 1000);
  }
  QCOMPARE(ledger.current()[MemoryCategory::gradients], 0);
}

namespace {
// Device memory on the host that counts what it hands out and refuses more than `limit` bytes at once.
class CountingMemory final : public DeviceMemory {
 public:
  explicit CountingMemory(std::int64_t limit) : limit_(limit) {}
  void* allocate_zeroed(std::int64_t bytes) override {
    if (live_ + bytes > limit_) throw std::runtime_error("device full");
    live_ += bytes;
    ++allocations;
    sizes_[p_ = ::operator new(static_cast<std::size_t>(bytes))] = bytes;
    std::memset(p_, 0, static_cast<std::size_t>(bytes));
    return p_;
  }
  void release(void* pointer) noexcept override {
    live_ -= sizes_[pointer];
    sizes_.erase(pointer);
    ++releases;
    ::operator delete(pointer);
  }
  std::string name() const override { return "test:0"; }
  int allocations = 0, releases = 0;

 private:
  std::int64_t limit_, live_ = 0;
  void* p_ = nullptr;
  std::map<void*, std::int64_t> sizes_;
};
}  // namespace

// A ledger with device memory: every Buffer of the rank comes from it, is
// zeroed, is charged as usual, and one that does not fit names the memory,
// the category, the bytes asked for and what the rank held.
void TestCore::buffer_allocates_from_the_ledgers_device_memory() {
  CountingMemory device(1000);
  MemoryLedger ledger;
  ledger.set_device_memory(&device);
  {
    Buffer a(ledger, MemoryCategory::gradients, 600);
    QCOMPARE(device.allocations, 1);
    QCOMPARE(static_cast<const unsigned char*>(a.data())[599], 0);
    QCOMPARE(ledger.current()[MemoryCategory::gradients], std::int64_t{600});
    try {
      Buffer b(ledger, MemoryCategory::activations, 500);
      QFAIL("a buffer larger than the device's free memory was allocated");
    } catch (const OutOfMemory& e) {
      const std::string m = e.what();
      for (const char* part : {"test:0", "500 bytes of activations", "600 bytes already held", "device full"})
        QVERIFY2(m.find(part) != std::string::npos, m.c_str());
    }
    QCOMPARE(ledger.current()[MemoryCategory::activations], std::int64_t{0});  // nothing charged for a failure
  }
  QCOMPARE(device.releases, 1);
  QCOMPARE(ledger.current_total(), std::int64_t{0});
}

void TestCore::thread_pool_covers_every_item_once() {
  ThreadPool pool(3);
  for (std::int64_t n : {1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
    pool.parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) seen[static_cast<std::size_t>(i)]++;
    });
    for (auto& s : seen) QCOMPARE(s.load(), 1);
  }
}

// A rank's thread and its DDP reducer thread submit to the same pool at once
// (backward's matmuls beside a bucket's all-reduce adds). Their jobs must take
// turns: a second job written over the first one's left both callers waiting
// forever (test_flash_attention hung so with 0.5 MB buckets).
void TestCore::thread_pool_takes_jobs_from_two_callers() {
  ThreadPool pool(3);
  constexpr int kJobs = 2000;
  std::atomic<std::int64_t> covered[2] = {0, 0};
  const auto submit = [&](int caller) {
    for (int j = 0; j < kJobs; ++j)
      pool.parallel_for(64, 1, [&](std::int64_t b, std::int64_t e) { covered[caller] += e - b; });
  };
  std::thread other(submit, 1);
  submit(0);
  other.join();
  QCOMPARE(covered[0].load(), std::int64_t{64} * kJobs);
  QCOMPARE(covered[1].load(), std::int64_t{64} * kJobs);
}

void TestCore::rng_is_deterministic_and_normal() {
  Rng a(42), b(42);
  for (int i = 0; i < 10; ++i) QCOMPARE(a.next_u64(), b.next_u64());
  Rng r(7);
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal(0.0f, 2.0f);
    sum += x;
    sq += x * x;
  }
  QVERIFY(std::fabs(sum / n) < 0.03);
  QVERIFY(std::fabs(std::sqrt(sq / n) - 2.0) < 0.03);
}

void TestCore::byte_tokenizer_round_trips_utf8() {
  const std::string text = "Hello, 世界";
  const auto ids = ByteTokenizer::encode(text);
  QCOMPARE(ids.size(), text.size());  // one token per UTF-8 byte
  QCOMPARE(ids[7], 0xE4);
  QCOMPARE(ByteTokenizer::decode(ids), text);
}

void TestCore::default_corpus_has_english_and_chinese() {
  const std::string_view corpus = default_corpus();
  QVERIFY(corpus.size() > 1'000'000);
  QVERIFY(corpus.find("It is a truth universally acknowledged") != std::string_view::npos);
  QVERIFY(corpus.find("作者：杜甫") != std::string_view::npos);
}

void TestCore::dataset_splits_and_samples_deterministically() {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "abcdefghij";
  const auto d = TextDataset::from_text(text, 16);
  QCOMPARE(d.tokens(Split::train), 1800);
  QCOMPARE(d.tokens(Split::validation), 200);
  const auto a = d.batch(ModelKind::gpt, Split::train, 1, 5, 0, 4, 16);
  const auto b = d.batch(ModelKind::gpt, Split::train, 1, 5, 2, 2, 16);  // samples 2 and 3 of the same step
  QVERIFY(std::equal(b.input_ids.begin(), b.input_ids.end(), a.input_ids.begin() + 32));
  for (int i = 0; i < 15; ++i) QCOMPARE(a.targets[static_cast<std::size_t>(i)], a.input_ids[static_cast<std::size_t>(i + 1)]);
  const auto c = d.batch(ModelKind::gpt, Split::train, 1, 6, 0, 4, 16);
  QVERIFY(c.input_ids != a.input_ids);  // another step, other windows
}

void TestCore::dataset_rejects_missing_empty_and_short_files() {
  QTemporaryDir dir;
  const std::string empty = (dir.path() + "/empty.txt").toStdString();
  std::ofstream(empty).close();
  const std::string short_file = (dir.path() + "/short.txt").toStdString();
  std::ofstream(short_file) << "too short";
  try {
    TextDataset d(empty, 8);
    QFAIL("an empty file must be refused");
  } catch (const ConfigError& e) {
    QVERIFY(std::string(e.what()).find("is empty") != std::string::npos);
  }
  QVERIFY_THROWS_EXCEPTION(ConfigError, TextDataset("/nonexistent/file.txt", 8));
  QVERIFY_THROWS_EXCEPTION(ConfigError, TextDataset(short_file, 8));
}

// The file's bytes are the tokens: GPT and BERT batches from a file equal those from its text.
void TestCore::dataset_from_a_file_samples_as_from_text() {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "Nel mezzo del cammin di nostra vita 人生旅途的中途 " + std::to_string(i) + "\n";
  QTemporaryDir dir;
  const std::string path = (dir.path() + "/corpus.txt").toStdString();
  std::ofstream(path, std::ios::binary) << text;
  const TextDataset from_file(path, 32);
  const TextDataset from_text = TextDataset::from_text(text, 32);
  QCOMPARE(from_file.tokens(Split::train), from_text.tokens(Split::train));
  QCOMPARE(from_file.tokens(Split::validation), static_cast<std::int64_t>(text.size()) / 10);
  for (ModelKind kind : {ModelKind::gpt, ModelKind::bert})
    for (Split split : {Split::train, Split::validation}) {
      const BatchData a = from_file.batch(kind, split, 7, 3, 0, 4, 32);
      const BatchData b = from_text.batch(kind, split, 7, 3, 0, 4, 32);
      QCOMPARE(a.input_ids, b.input_ids);
      QCOMPARE(a.targets, b.targets);
    }
  const BatchData g = from_file.batch(ModelKind::gpt, Split::train, 7, 3, 0, 1, 32);
  for (std::int32_t id : g.input_ids) QVERIFY(id >= 0 && id < 256);  // bytes, widened
}

void TestCore::masked_lm_follows_80_10_10() {
  const int T = 200000;
  std::vector<std::int32_t> tokens(T), inputs(T), targets(T);
  for (int i = 0; i < T; ++i) tokens[static_cast<std::size_t>(i)] = 'a' + i % 26;
  Rng rng(3);
  mask_tokens(tokens.data(), inputs.data(), targets.data(), T, rng);
  int chosen = 0, masked = 0, same = 0;
  for (int i = 0; i < T; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (targets[k] < 0) {
      QCOMPARE(inputs[k], tokens[k]);  // unchosen positions are untouched
      continue;
    }
    ++chosen;
    QCOMPARE(targets[k], tokens[k]);
    masked += inputs[k] == ByteTokenizer::kMask;
    same += inputs[k] == tokens[k];
  }
  QVERIFY(std::fabs(chosen / double(T) - 0.15) < 0.005);
  QVERIFY(std::fabs(masked / double(chosen) - 0.80) < 0.01);
  // "unchanged" is 10%, plus random draws that happen to hit the same byte (1/256 of 10%).
  QVERIFY(std::fabs(same / double(chosen) - 0.10) < 0.01);
}

void TestCore::lr_schedule_warms_up_then_decays() {
  const LrSchedule s{1.0f, 0.1f, 10, 111};
  QCOMPARE(s.at(0), 0.1f);
  QCOMPARE(s.at(9), 1.0f);
  QCOMPARE(s.at(10), 1.0f);
  QVERIFY(std::fabs(s.at(60) - 0.55f) < 1e-3f);  // half-way through the cosine
  QVERIFY(std::fabs(s.at(110) - 0.1f) < 1e-6f);
}

void TestCore::safetensors_round_trip() {
  QTemporaryDir dir;
  const std::string path = (dir.path() + "/t.safetensors").toStdString();
  const std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  const std::vector<std::int32_t> b = {7, -8};
  write_safetensors({"", path}, {{"a", "F32", {2, 3}, a.data()}, {"b", "I32", {2}, b.data()}}, {{"k", "v"}});
  const auto f = SafetensorsFile::read(path);
  QCOMPARE(f.floats("a"), a);
  QCOMPARE(f.ints("b"), b);
  QCOMPARE(f.entry("a").shape, (std::vector<std::int64_t>{2, 3}));
  QCOMPARE(f.metadata().at("k"), std::string("v"));
}

void TestCore::safetensors_bad_files_name_the_problem() {
  QTemporaryDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = (dir.path() + "/").toStdString() + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  auto expect_error = [](const std::string& path, const char* fragment) {
    try {
      SafetensorsFile::read(path);
      QFAIL("a bad file was accepted");
    } catch (const FormatError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  expect_error(write("short", "abc"), "too short");
  expect_error(write("huge", std::string("\xff\xff\xff\xff\x00\x00\x00\x00", 8) + "{}"), "header length");
  const std::string json = "{\"x\": oops}";
  std::string len(8, '\0');
  len[0] = static_cast<char>(json.size());
  expect_error(write("json", len + json), "byte 14");
  const std::string bad_range = R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";
  len[0] = static_cast<char>(bad_range.size());
  expect_error(write("range", len + bad_range + "1234"), "tensor 'x'");
  expect_error("/nonexistent.safetensors", "cannot open");
  // Damaged headers: a number past a double, a shape past 64 bits, a negative dimension.
  auto header_file = [&](const std::string& name, const std::string& header, const std::string& data) {
    std::string size(8, '\0');
    size[0] = static_cast<char>(header.size());
    return write(name, size + header + data);
  };
  expect_error(header_file("inf", R"({"x": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})", "1234"),
               "the number 1e400 is beyond the range of a double");
  expect_error(header_file("numel",
                           R"({"x": {"dtype": "F32", "shape": [4294967296, 4294967296], )"
                           R"("data_offsets": [0, 4]}})",
                           "1234"),
               "tensor 'x': shape has more elements than fit in 64 bits");
  expect_error(header_file("negative", R"({"x": {"dtype": "F32", "shape": [-1, 1], "data_offsets": [0, 4]}})", "1234"),
               "tensor 'x': shape has a negative dimension");
  // A tensor named twice: which of the two would be read is a guess (nlohmann would keep the last).
  expect_error(header_file("twice",
                           R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, )"
                           R"("x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                           "12345678"),
               "byte 70: header is not valid JSON (key 'x' appears twice in one object)");
  expect_error(dir.path().toStdString(), "is a directory, not a .safetensors file");
  const std::string fifo = (dir.path() + "/fifo").toStdString();
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error(fifo, "is a FIFO (named pipe)");  // before the fix: blocked forever in the open
}

void TestCore::checked_sizes_refuse_to_wrap() {
  QCOMPARE(checked_mul(1ll << 31, 1ll << 31), 1ll << 62);
  QVERIFY_THROWS_EXCEPTION(SizeOverflow, checked_mul(1ll << 32, 1ll << 31));
  QVERIFY_THROWS_EXCEPTION(SizeOverflow, checked_add(kMaxSize, 1));
  QVERIFY_THROWS_EXCEPTION(SizeOverflow, checked_sub(-kMaxSize, 2));
  const CheckedSize h = 1 << 20;
  QCOMPARE((2 * h * h + h).value(), (2ll << 40) + (1 << 20));
  QVERIFY_THROWS_EXCEPTION(SizeOverflow, h * h * h * 8);  // 2^63
  try {
    (void)(CheckedSize(3'000'000'000) * 4'000'000'000 * 1'000);
    QFAIL("no SizeOverflow");
  } catch (const ConfigError& e) {  // a ConfigError: the CLI exits 2
    QVERIFY2(std::string(e.what()).find("12000000000000000000") == std::string::npos, e.what());
    QVERIFY2(std::string(e.what()).find("does not fit in 64 bits") != std::string::npos, e.what());
  }
  QCOMPARE(checked_int(1 << 30, "--seq"), 1 << 30);
  try {
    (void)checked_int(1ll << 31, "n_positions");
    QFAIL("no ConfigError");
  } catch (const ConfigError& e) {
    QCOMPARE(std::string(e.what()), std::string("n_positions: 2147483648 does not fit in a 32-bit integer"));
  }
  MemoryBytes bytes;  // an estimate's categories near 2^63 do not add up to a negative total
  bytes[MemoryCategory::parameters] = kMaxSize / 2 + 1;
  bytes[MemoryCategory::activations] = kMaxSize / 2 + 1;
  QVERIFY_THROWS_EXCEPTION(SizeOverflow, (void)bytes.total());
}

void TestCore::json_text_names_the_place_of_every_error() {
  JsonTextError error;
  QVERIFY(parse_json_text("{\"a\": [1, 2]}", error).has_value());
  QVERIFY(!parse_json_text("{\n  \"a\": 1,\n  \"b\": 1e400\n}", error));  // nlohmann: out_of_range.406
  QCOMPARE(error.where_and_why(), std::string("line 3, column 8: key 'b': the number 1e400 is beyond the range of a "
                                              "double (about ±1.8e308)"));
  QCOMPARE(error.byte, std::size_t{19});
  QVERIFY(!parse_json_text("{\"a\": tru}", error));
  QCOMPARE(error.line, 1);
  QVERIFY2(error.reason.rfind("syntax error", 0) == 0, error.reason.c_str());
  // 60,000 levels: no stack overflow (the parse is iterative), refused at level 513.
  const std::string deep = "{\"x\": " + std::string(60000, '[') + std::string(60000, ']') + "}";
  ThreadCpuTimer timer;  // CPU time: other work on the cores does not count
  timer.start();
  QVERIFY(!parse_json_text(deep, error));
  QCOMPARE(error.reason, std::string("values nest deeper than 512 levels"));
  QCOMPARE(error.byte, std::size_t{6 + 511});  // the object is level 1, the 512th '[' level 513
  QVERIFY(timer.elapsed() < 5000);
  QVERIFY(parse_json_text("[" + std::string(511, '[') + std::string(512, ']'), error).has_value());
  // A syntax error's last token is quoted, but never at length.
  QVERIFY(!parse_json_text("\"" + std::string(100000, 'x'), error));
  QVERIFY2(error.reason.size() < 260, error.reason.c_str());
  // A key repeated in one object is refused at its second place; the same key in two objects is not.
  QVERIFY(!parse_json_text("{\"a\": {\"k\": 1, \"s\": \"x:\"},\n \"b\": [{\"k\": 2}], \"a\" : 3}", error));
  QCOMPARE(error.where_and_why(), std::string("line 2, column 19: key 'a' appears twice in one object"));
  QVERIFY(!parse_json_text("[{\"w\": 1, \"w\": 1}]", error));
  QCOMPARE(error.byte, std::size_t{10});
  QVERIFY(parse_json_text("{\"a\": {\"k\": 1}, \"b\": {\"k\": 1}, \"c\": [{\"k\": 1}, {\"k\": 2}]}", error).has_value());
}

void TestCore::json_value_summary_is_short() {
  using nlohmann::json;
  QCOMPARE(json_value_summary(json::parse("[[[]]]")), std::string("array of 1 element"));
  QCOMPARE(json_value_summary(json::parse("{\"a\": 1, \"b\": 2}")), std::string("object of 2 keys"));
  QCOMPARE(json_value_summary(json(1.5)), std::string("number 1.5"));
  QCOMPARE(json_value_summary(json("768")), std::string("string \"768\""));
  QCOMPARE(json_value_summary(json(true)), std::string("boolean true"));
  QCOMPARE(json_value_summary(json(std::string(10000, 'x'))), "string \"" + std::string(60, 'x') + "...\"");
  QCOMPARE(bounded_excerpt("\u00e9\u00e9\u00e9", 3), std::string("\u00e9..."));  // never half a UTF-8 character
}

void TestCore::input_files_must_be_regular_files() {
  QTemporaryDir dir;
  const std::string folder = dir.path().toStdString();
  auto message = [](const std::string& path) {
    try {
      (void)read_input_file(path, "--model");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no ConfigError");
  };
  QCOMPARE(message(folder), "--model: '" + folder + "' is a directory, not a file; give the config file inside it");
  QCOMPARE(message("/dev/null"), std::string("--model: '/dev/null' is a character device, not a file"));
  const std::string fifo = folder + "/fifo";
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  QCOMPARE(message(fifo), "--model: '" + fifo + "' is a FIFO (named pipe), not a file");
  QCOMPARE(message(folder + "/missing.json"), "--model: cannot open '" + folder + "/missing.json': no such file");
  std::ofstream(folder + "/empty.json").flush();
  QCOMPARE(message(folder + "/empty.json"), "--model: '" + folder + "/empty.json' is an empty file");
  std::ofstream(folder + "/big.json") << std::string(100, ' ');
  try {
    (void)read_input_file(folder + "/big.json", "--model", 10);
    QFAIL("no ConfigError");
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find("is 100 bytes; a config file is at most 10 bytes") != std::string::npos,
             e.what());
  }
  std::ofstream(folder + "/ok.json") << "{}";
  QCOMPARE(read_input_file(folder + "/ok.json", "--model"), std::string("{}"));
  QVERIFY(!special_file_kind(folder + "/ok.json"));
  QCOMPARE(special_file_kind(fifo).value_or(""), std::string("a FIFO (named pipe)"));
}

// The edit distance counts insertions, deletions, substitutions and adjacent
// swaps; a suggestion is made only for a name a typo away.
void TestCore::did_you_mean_finds_near_names_only() {
  QCOMPARE(edit_distance("kitten", "sitting"), std::size_t{3});  // Levenshtein's example
  QCOMPARE(edit_distance("", "abc"), std::size_t{3});
  QCOMPARE(edit_distance("trian", "train"), std::size_t{1});  // a swap is one edit
  QCOMPARE(edit_distance("same", "same"), std::size_t{0});
  const std::vector<std::string> flags{"--steps", "--seq", "--seed", "--batch"};
  QCOMPARE(nearest_name("--step", flags), std::string("--steps"));
  QCOMPARE(did_you_mean("--step", flags), std::string("; did you mean '--steps'?"));
  QCOMPARE(nearest_name("--btach", flags), std::string("--batch"));
  QCOMPARE(did_you_mean("--learning-rate", flags), std::string());  // nothing near: no guess
  const std::vector<std::string> lessons{"pipeline_bubbles", "pipeline_send_recv", "zero_stages"};
  QCOMPARE(nearest_name("pipeline_bubble", lessons), std::string("pipeline_bubbles"));
  QCOMPARE(nearest_name("pipeline", lessons), std::string());
  QCOMPARE(nearest_name("x", std::vector<std::string>{}), std::string());
}

QTEST_GUILESS_MAIN(TestCore)
#include "test_core.moc"
