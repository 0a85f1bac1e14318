// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 byte-level BPE and BERT WordPiece against the Hugging Face tokenizers
// library: the ids (and decoded texts) of tests/fixtures/tokenizers/expected.json,
// written by tests/tools/make_tokenizer_fixtures.py, for mixed English and
// Chinese texts (accents, digits, emoji, whitespace runs, special tokens in the
// text, a word past 100 characters, the empty text), from tokenizer.json and
// from the older vocabulary files; the Unicode tables; byte-level round trips.
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/rng.h"
#include "data/bpe_tokenizer.h"
#include "data/default_corpus.h"
#include "data/tokenizer.h"
#include "data/unicode_text.h"

using namespace shardscope;

namespace {

const std::string kDir = std::string(SHARDSCOPE_FIXTURES) + "/tokenizers/";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json expected_fixture() {
  return nlohmann::json::parse(read_text(kDir + "expected.json"));
}

std::string show(const Tokenizer& tokenizer, const std::vector<std::int32_t>& ids) {
  std::string out;
  for (std::int32_t id : ids) out += std::to_string(id) + ":" + tokenizer.token_text(id).value_or("?") + " ";
  return out;
}

// Runs `f`, expects ConfigError or FormatError, returns its message.
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(not refused)";
}

}  // namespace

class TestTokenizers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ids_match_the_tokenizers_library_data();
  void ids_match_the_tokenizers_library();
  void option_variants_match_the_tokenizers_library();
  void bpe_decode_round_trips_any_text();
  void bpe_round_trips_the_corpus();
  void special_ids_and_vocab_sizes();
  void gpt2_pre_tokenizer_regex();
  void unicode_classes_and_mappings();
  void invalid_utf8_is_refused_with_its_byte();
  void fetched_minilm_tokenizer_matches_the_fixture();
};

void TestTokenizers::ids_match_the_tokenizers_library_data() {
  QTest::addColumn<QString>("path");
  QTest::addColumn<QString>("key");  // the expected ids in expected.json
  QTest::addColumn<QString>("kind");
  QTest::newRow("bpe tokenizer.json") << "bpe_json"
                                      << "bpe"
                                      << "bpe";
  QTest::newRow("bpe vocab.json + merges.txt") << "bpe_files/vocab.json"
                                               << "bpe"
                                               << "bpe";
  QTest::newRow("bpe directory of vocab.json + merges.txt") << "bpe_files"
                                                            << "bpe"
                                                            << "bpe";
  QTest::newRow("wordpiece tokenizer.json") << "minilm_json/tokenizer.json"
                                            << "wordpiece"
                                            << "wordpiece";
  QTest::newRow("wordpiece vocab.txt") << "minilm_vocab"
                                       << "wordpiece"
                                       << "wordpiece";
  QTest::newRow("added tokens: lstrip, rstrip, single_word, normalized") << "added_json"
                                                                         << "added"
                                                                         << "wordpiece";
}

void TestTokenizers::ids_match_the_tokenizers_library() {
  QFETCH(QString, path);
  QFETCH(QString, key);
  QFETCH(QString, kind);
  const nlohmann::json fixture = expected_fixture();
  const auto& expected = fixture[key.toStdString()];
  const auto& texts = fixture[key == "added" ? "added_texts" : "texts"];
  QVERIFY(texts.size() >= 7);
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(kDir + path.toStdString());
  QCOMPARE(std::string(tokenizer->kind()), kind.toStdString());
  QCOMPARE(tokenizer->vocab_size(), expected["vocab_size"].get<std::int32_t>());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto want = expected["ids"][i].get<std::vector<std::int32_t>>();
    const std::vector<std::int32_t> got = tokenizer->encode(text);
    QVERIFY2(got == want, qPrintable(QString("text %1 %2:\n  got      %3\n  expected %4")
                                         .arg(i)
                                         .arg(QString::fromStdString(nlohmann::json(text).dump()))
                                         .arg(QString::fromStdString(show(*tokenizer, got)))
                                         .arg(QString::fromStdString(show(*tokenizer, want)))));
    QCOMPARE(tokenizer->decode(got), expected["decoded"][i].get<std::string>());
  }
}

// The fixture's tokenizer.json files with other options (cased BERT, accents
// kept, GPT-2 with a prefix space, ...): the same JSON merge patch as the
// fixture script applied, then the library's ids.
void TestTokenizers::option_variants_match_the_tokenizers_library() {
  const nlohmann::json fixture = expected_fixture();
  QVERIFY(fixture["variants"].size() >= 8);
  QTemporaryDir dir;
  for (const auto& [name, variant] : fixture["variants"].items()) {
    nlohmann::json document =
        nlohmann::json::parse(read_text(kDir + variant["base"].get<std::string>() + "/tokenizer.json"));
    document.merge_patch(variant["patch"]);
    const std::string path = dir.filePath(QString::fromStdString(name + ".json")).toStdString();
    std::ofstream(path) << document.dump();
    const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(path);
    for (std::size_t i = 0; i < fixture["texts"].size(); ++i) {
      const std::string text = fixture["texts"][i].get<std::string>();
      const auto want = variant["ids"][i].get<std::vector<std::int32_t>>();
      const std::vector<std::int32_t> got = tokenizer->encode(text);
      QVERIFY2(got == want, qPrintable(QString("%1, text %2:\n  got      %3\n  expected %4")
                                           .arg(QString::fromStdString(name))
                                           .arg(i)
                                           .arg(QString::fromStdString(show(*tokenizer, got)))
                                           .arg(QString::fromStdString(show(*tokenizer, want)))));
      QCOMPARE(tokenizer->decode(got), variant["decoded"][i].get<std::string>());
    }
  }
}

// Byte-level BPE loses nothing: decode(encode(text)) is the text, special tokens included.
void TestTokenizers::bpe_decode_round_trips_any_text() {
  const nlohmann::json fixture = expected_fixture();
  const std::unique_ptr<Tokenizer> bpe = load_tokenizer(kDir + "bpe_json");
  for (const auto& text : fixture["texts"])
    QCOMPARE(bpe->decode(bpe->encode(text.get<std::string>()), false), text.get<std::string>());
  // Random code points from every plane (no surrogates), with runs of spaces and apostrophes.
  Rng rng(17);
  const char32_t common[] = {U' ', U' ', U'\'', U'\n', U'a', U'1', U'中', U'\t'};
  for (int trial = 0; trial < 200; ++trial) {
    std::u32string text;
    for (int i = 0; i < 40; ++i) {
      char32_t c = static_cast<char32_t>(rng.next_u64() % 0x110000);
      if (c >= 0xD800 && c <= 0xDFFF) c = U'x';
      text.push_back(rng.next_u64() % 2 ? common[rng.next_u64() % 8] : c);
    }
    const std::string utf8 = unicode::encode_utf8(text);
    QCOMPARE(bpe->decode(bpe->encode(utf8), false), utf8);
  }
}

// The shipped corpus (English and Chinese, long unbroken Chinese lines) through the BPE and back.
void TestTokenizers::bpe_round_trips_the_corpus() {
  const std::unique_ptr<Tokenizer> bpe = load_tokenizer(kDir + "bpe_files");
  std::string_view corpus = default_corpus();
  std::string text(corpus.substr(0, 400000));
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
    text.pop_back();  // whole characters
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  const std::vector<std::int32_t> ids = bpe->encode(text);
  QVERIFY(ids.size() < text.size() / 2);  // it merges: English is ~4 bytes a token
  QCOMPARE(bpe->decode(ids), text);
}

void TestTokenizers::special_ids_and_vocab_sizes() {
  for (const char* path : {"minilm_json", "minilm_vocab/vocab.txt"}) {
    const auto bert = load_tokenizer(kDir + path);
    const SpecialTokenIds& s = bert->special_ids();
    QCOMPARE(s.pad, 0);
    QCOMPARE(s.unk, 100);
    QCOMPARE(s.cls, 101);
    QCOMPARE(s.sep, 102);
    QCOMPARE(s.mask, 103);
    QCOMPARE(bert->vocab_size(), 30522);
    QCOMPARE(bert->token_text(7592).value_or(""), std::string("hello"));
    QCOMPARE(bert->token_id("##ing").value_or(-1), 2075);
    QVERIFY(!bert->token_text(30522).has_value());
    QCOMPARE(bert->encode("hello", false), std::vector<std::int32_t>{7592});
    QCOMPARE(bert->decode({101, 7592, 102}, false), std::string("[CLS] hello [SEP]"));
  }
  const auto gpt = load_tokenizer(kDir + "bpe_json");
  QCOMPARE(gpt->special_ids().eos, 0);
  QCOMPARE(gpt->special_ids().unk, -1);
  QCOMPARE(gpt->decode({0, 0}, true), std::string());
  QCOMPARE(gpt->decode({0, 99999, -1}, false), std::string("<|endoftext|>"));  // unknown ids are skipped
  QCOMPARE(bytes_to_token_text(" the\n"), std::string("ĠtheĊ"));
  QCOMPARE(unicode_to_byte(U'Ġ'), 0x20);
  QCOMPARE(unicode_to_byte(U'中'), -1);
}

// Pieces as Python's `regex` module splits them with GPT-2's pattern.
void TestTokenizers::gpt2_pre_tokenizer_regex() {
  const std::u32string text = U"I'm  here's 'll\n\nnow 123abc!!  ?\t end ';中文，很好 ٣٤x  ";
  std::vector<std::string> pieces;
  for (const auto& [begin, end] : split_gpt2_pieces(text))
    pieces.push_back(unicode::encode_utf8(text.substr(begin, end - begin)));
  // As the tokenizers library's ByteLevel pre-tokenizer splits it ("\n\nnow": "\s+(?!\S)" leaves the last "\n").
  const std::vector<std::string> want = {"I",    "'m",  " ",    " here", "'s",   " '",  "ll", "\n",
                                         "\n",   "now", " 123", "abc",   "!!",   " ",   " ?", "\t",
                                         " end", " ';", "中文", "，",    "很好", " ٣٤", "x",  "  "};
  QCOMPARE(pieces, want);
}

void TestTokenizers::unicode_classes_and_mappings() {
  using namespace unicode;
  QVERIFY(has_class(U'a', kLetter) && has_class(U'中', kLetter) && has_class(U'é', kLetter));
  QVERIFY(has_class(U'7', kNumber) && has_class(U'٣', kNumber) && has_class(U'½', kNumber));
  QVERIFY(has_class(U'\u3000', kRegexSpace) && has_class(U'\u00a0', kRegexSpace) && !has_class(U'\u200b', kRegexSpace));
  QVERIFY(has_class(U'$', kBertPunctuation) && has_class(U'，', kBertPunctuation) &&
          !has_class(U'a', kBertPunctuation));
  QVERIFY(has_class(U'\0', kBertControl) && has_class(U'\u00ad', kBertControl) && !has_class(U'\t', kBertControl));
  QVERIFY(has_class(U'\t', kCleanToSpace) && has_class(U'\u3000', kCleanToSpace));
  QVERIFY(has_class(U'\u0301', kAccentMark) && !has_class(U'e', kAccentMark));
  QVERIFY(is_cjk_ideograph(U'中') && !is_cjk_ideograph(U'，') && !is_cjk_ideograph(U'한'));
  QCOMPARE(char_class(0x110000), std::uint8_t{0});
  const auto lower = [](char32_t c) {
    std::u32string s;
    append_lowercase(c, s);
    return s;
  };
  const auto strip = [](char32_t c) {
    std::u32string s;
    append_without_accents(c, s);
    return s;
  };
  QCOMPARE(lower(U'A'), std::u32string(U"a"));
  QCOMPARE(lower(U'Σ'), std::u32string(U"σ"));
  QCOMPARE(lower(U'Ā'), std::u32string(U"ā"));
  QCOMPARE(lower(U'İ'), std::u32string(U"i\u0307"));
  QCOMPARE(lower(U'中'), std::u32string(U"中"));
  QCOMPARE(strip(U'é'), std::u32string(U"e"));
  QCOMPARE(strip(U'Å'), std::u32string(U"A"));
  QCOMPARE(strip(U'ø'), std::u32string(U"ø"));  // no decomposition: kept
  QCOMPARE(strip(U'\u0301'), std::u32string());
  QCOMPARE(strip(U'한'), std::u32string(U"\u1112\u1161\u11ab"));
  QCOMPARE(strip(U'\uf900'), std::u32string(U"\u8c48"));  // a CJK compatibility ideograph
}

void TestTokenizers::invalid_utf8_is_refused_with_its_byte() {
  const std::pair<std::string, std::string> cases[] = {
      {"ab\xff", "invalid UTF-8 at byte 2"},           {"abc\xe4\xb8", "byte 3 (a sequence cut short)"},
      {"\xc0\x80", "invalid UTF-8 at byte 0"},         {"x\xed\xa0\x80", "invalid UTF-8 at byte 1"},
      {"\xf4\x90\x80\x80", "invalid UTF-8 at byte 0"}, {"a\x80", "invalid UTF-8 at byte 1"}};
  const auto bert = load_tokenizer(kDir + "minilm_json");
  for (const auto& [text, message] : cases) {
    const std::string what = refusal([&] { bert->encode(text); });
    QVERIFY2(what.find("the text to tokenize: ") != std::string::npos && what.find(message) != std::string::npos,
             what.c_str());
  }
  QCOMPARE(unicode::utf8_lossy("a\xff"
                               "b\xe4\xb8"
                               "c\xe4\xb8\xad"),
           std::string("a\uFFFDb\uFFFDc中"));
}

// scripts/fetch_minilm.sh's model (the later hidden-state tests read it): its
// tokenizer.json is the committed fixture's.
void TestTokenizers::fetched_minilm_tokenizer_matches_the_fixture() {
  const auto env = QProcessEnvironment::systemEnvironment();
  const QString cache =
      env.value("SHARDSCOPE_MODEL_CACHE", env.value("XDG_CACHE_HOME", env.value("HOME") + "/.cache") + "/shardscope");
  const std::string dir = (cache + "/all-MiniLM-L6-v2").toStdString();
  if (!std::filesystem::exists(dir + "/tokenizer.json"))
    QSKIP(qPrintable("all-MiniLM-L6-v2 is not fetched (" + QString::fromStdString(dir) +
                     "): run scripts/fetch_minilm.sh to check the real model's tokenizer"));
  const nlohmann::json fixture = expected_fixture();
  const auto fetched = load_tokenizer(dir);
  for (std::size_t i = 0; i < fixture["texts"].size(); ++i)
    QCOMPARE(fetched->encode(fixture["texts"][i].get<std::string>()),
             fixture["wordpiece"]["ids"][i].get<std::vector<std::int32_t>>());
}

QTEST_GUILESS_MAIN(TestTokenizers)
#include "test_tokenizers.moc"
