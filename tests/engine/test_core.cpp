// SPDX-License-Identifier: GPL-3.0-or-later
// Core pieces: the memory ledger, buffers, the thread pool, the RNG, the
// tokenizer, the dataset and MLM masking, the LR schedule, safetensors.
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include "core/buffer.h"
#include "core/error.h"
#include "core/memory_ledger.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "data/byte_tokenizer.h"
#include "data/default_corpus.h"
#include "data/masked_lm.h"
#include "data/text_dataset.h"
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
  write_safetensors(path, {{"a", "F32", {2, 3}, a.data()}, {"b", "I32", {2}, b.data()}}, {{"k", "v"}});
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
}

QTEST_GUILESS_MAIN(TestCore)
#include "test_core.moc"
