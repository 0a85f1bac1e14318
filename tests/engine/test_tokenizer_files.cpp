// SPDX-License-Identifier: GPL-3.0-or-later
// Bad tokenizer files: every one is refused with a ConfigError or FormatError
// whose message names the file and the field, entry or line at fault (the CLI
// turns them into exit code 2).
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "data/tokenizer.h"

using namespace shardscope;

namespace {

const std::string kDir = std::string(SHARDSCOPE_FIXTURES) + "/tokenizers/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A small WordPiece tokenizer.json with `model` and `extra` top-level fields spliced in.
std::string wordpiece_json(const std::string& model, const std::string& extra = "", const std::string& added = "[]") {
  return "{\n  \"added_tokens\": " + added +
         ",\n  \"normalizer\": {\"type\": \"BertNormalizer\"},\n"
         "  \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},\n" +
         extra + "  \"model\": " + model + "\n}\n";
}

const char* kWordPieceModel =
    "{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\",\n"
    "    \"vocab\": {\"[UNK]\": 0, \"[CLS]\": 1, \"[SEP]\": 2, \"a\": 3, \"b\": 4}}";

// A small BPE tokenizer.json with `merges` and `vocab` (and `fields` inside the model).
std::string bpe_json(const std::string& vocab, const std::string& merges, const std::string& fields = "",
                     const std::string& pre_tokenizer = "ByteLevel") {
  return "{\n  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"" + pre_tokenizer +
         "\", \"add_prefix_space\": false},\n  \"model\": {\n    \"type\": \"BPE\",\n" + fields +
         "    \"vocab\": " + vocab + ",\n    \"merges\": " + merges + "\n  }\n}\n";
}

}  // namespace

class TestTokenizerFiles : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void bad_files_are_refused_naming_file_and_field_data();
  void bad_files_are_refused_naming_file_and_field();
  void small_handmade_files_load();
};

using Files = std::map<std::string, std::string>;
Q_DECLARE_METATYPE(Files)

void TestTokenizerFiles::bad_files_are_refused_naming_file_and_field_data() {
  QTest::addColumn<Files>("files");        // written into a fresh directory
  QTest::addColumn<QString>("load");       // the path given to load_tokenizer, under that directory
  QTest::addColumn<QStringList>("parts");  // what the message must say
  const std::string bpe = read_file(kDir + "bpe_json/tokenizer.json");
  const std::string ab_vocab = "{\"a\": 0, \"b\": 1, \"ab\": 2}";
  QTest::newRow("truncated tokenizer.json") << Files{{"tokenizer.json", bpe.substr(0, bpe.size() / 2)}} << ""
                                            << QStringList{"tokenizer.json: line ", "syntax error"};
  QTest::newRow("empty tokenizer.json") << Files{{"tokenizer.json", ""}} << ""
                                        << QStringList{"tokenizer.json", "empty"};
  QTest::newRow("not an object") << Files{{"tokenizer.json", "[1, 2]"}} << ""
                                 << QStringList{"tokenizer.json", "top level must be a JSON object"};
  QTest::newRow("no model") << Files{{"tokenizer.json", "{\"added_tokens\": []}"}} << ""
                            << QStringList{"tokenizer.json", ": model: is missing"};
  QTest::newRow("model without a type") << Files{{"tokenizer.json", wordpiece_json("{\"vocab\": {\"a\": 0}}")}} << ""
                                        << QStringList{"tokenizer.json: model.type: is missing"};
  QTest::newRow("unigram model") << Files{{"tokenizer.json", wordpiece_json("{\"type\": \"Unigram\", \"vocab\": []}")}}
                                 << "" << QStringList{"tokenizer.json line 5: model.type: 'Unigram' is not supported"};
  QTest::newRow("vocab is a list") << Files{{"tokenizer.json", bpe_json("[[\"a\", 0.0]]", "[]")}} << ""
                                   << QStringList{"tokenizer.json line 6: model.vocab: expected an object"};
  QTest::newRow("vocab ids with a gap") << Files{{"tokenizer.json", bpe_json("{\"a\": 0, \"b\": 2}", "[]")}} << ""
                                        << QStringList{"tokenizer.json line 6: model.vocab.b: id 2 is outside 0..1",
                                                       "dense"};
  QTest::newRow("vocab id given twice") << Files{{"tokenizer.json", bpe_json("{\"a\": 0, \"b\": 0}", "[]")}} << ""
                                        << QStringList{"model.vocab.b: id 0 is also the id of 'a'"};
  QTest::newRow("vocab id not a number") << Files{{"tokenizer.json", bpe_json("{\"a\": \"zero\"}", "[]")}} << ""
                                         << QStringList{"tokenizer.json line 6: model.vocab.a: expected an id"};
  QTest::newRow("merge of an unknown token")
      << Files{{"tokenizer.json", bpe_json(ab_vocab, "[[\"a\", \"b\"], [\"a\", \"zz\"]]")}} << ""
      << QStringList{"tokenizer.json line 7: model.merges[1]", "'zz' is not in model.vocab"};
  QTest::newRow("merge whose result is unknown")
      << Files{{"tokenizer.json", bpe_json(ab_vocab, "[\"b a\"]")}} << ""
      << QStringList{"model.merges[0]", "the merged token 'ba' is not in model.vocab"};
  QTest::newRow("merge string of three tokens") << Files{{"tokenizer.json", bpe_json(ab_vocab, "[\"a b a\"]")}} << ""
                                                << QStringList{"model.merges[0]: expected \"left right\""};
  QTest::newRow("merges missing") << Files{{"tokenizer.json", bpe_json(ab_vocab, "null")}} << ""
                                  << QStringList{"tokenizer.json", "model.merges: is missing"};
  QTest::newRow("bpe dropout") << Files{{"tokenizer.json", bpe_json(ab_vocab, "[]", "    \"dropout\": 0.1,\n")}} << ""
                               << QStringList{"tokenizer.json line 6: model.dropout", "not supported"};
  QTest::newRow("bpe unk_token not in vocab")
      << Files{{"tokenizer.json", bpe_json(ab_vocab, "[]", "    \"unk_token\": \"<unk>\",\n")}} << ""
      << QStringList{"model.unk_token: '<unk>' is not in model.vocab"};
  QTest::newRow("bpe with a Metaspace pre-tokenizer")
      << Files{{"tokenizer.json", bpe_json(ab_vocab, "[]", "", "Metaspace")}} << ""
      << QStringList{"tokenizer.json line 3: pre_tokenizer.type: 'Metaspace' is not supported"};
  QTest::newRow("wordpiece without [UNK]")
      << Files{{"tokenizer.json", wordpiece_json("{\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}")}} << ""
      << QStringList{"tokenizer.json", "model.unk_token: '[UNK]' is not in model.vocab"};
  QTest::newRow("added token without content")
      << Files{{"tokenizer.json", wordpiece_json(kWordPieceModel, "", "[{\"id\": 5}]")}} << ""
      << QStringList{"tokenizer.json line 2: added_tokens[0].content: expected the token's text"};
  QTest::newRow("added token with a negative id")
      << Files{{"tokenizer.json", wordpiece_json(kWordPieceModel, "", "[{\"id\": -1, \"content\": \"x\"}]")}} << ""
      << QStringList{"added_tokens[0].id: expected an id from 0"};
  QTest::newRow("template with an unknown special token")
      << Files{{"tokenizer.json",
                wordpiece_json(
                    kWordPieceModel,
                    "  \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                    "{\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
                    " \"special_tokens\": {}},\n")}}
      << "" << QStringList{"tokenizer.json line 5: post_processor.special_tokens.[CLS].ids: is missing"};
  QTest::newRow("bert processing with an id past the vocabulary")
      << Files{{"tokenizer.json", wordpiece_json(kWordPieceModel,
                                                 "  \"post_processor\": {\"type\": \"BertProcessing\", "
                                                 "\"cls\": [\"[CLS]\", 1], \"sep\": [\"[SEP]\", 99]},\n")}}
      << ""
      << QStringList{"tokenizer.json line 5: post_processor.sep: expected a token id below the vocabulary size 5"};
  QTest::newRow("directory with no tokenizer file")
      << Files{{"config.json", "{}"}} << "" << QStringList{"holds no tokenizer.json, vocab.txt or vocab.json"};
  QTest::newRow("missing path") << Files{} << "nothing/tokenizer.json"
                                << QStringList{"tokenizer: cannot open", "nothing/tokenizer.json"};
  QTest::newRow("file of another kind") << Files{{"model.bin", "x"}} << "model.bin"
                                        << QStringList{"cannot tell what", "model.bin"};
  QTest::newRow("vocab.json without merges.txt")
      << Files{{"vocab.json", ab_vocab}} << "" << QStringList{"tokenizer: cannot open", "merges.txt"};
  QTest::newRow("merges.txt line that does not parse")
      << Files{{"vocab.json", ab_vocab}, {"merges.txt", "#version: 0.2\na b\nab\n"}} << ""
      << QStringList{"merges.txt line 3: expected \"left right\" (two tokens and one space), got 'ab'"};
  QTest::newRow("merges.txt naming an unknown token")
      << Files{{"vocab.json", ab_vocab}, {"merges.txt", "#version: 0.2\na c\n"}} << ""
      << QStringList{"merges.txt line 2: 'a' + 'c': 'c' is not in the vocabulary (vocab.json)"};
  QTest::newRow("vocab.json ids not dense") << Files{{"vocab.json", "{\"a\": 0, \"b\": 5}"}, {"merges.txt", ""}} << ""
                                            << QStringList{"vocab.json line 1: b: id 5 is outside 0..1"};
  QTest::newRow("vocab.txt without [UNK]")
      << Files{{"vocab.txt", "[CLS]\n[SEP]\nhello\n"}} << "" << QStringList{"vocab.txt: has no line '[UNK]'"};
  QTest::newRow("vocab.txt without [SEP]")
      << Files{{"vocab.txt", "[UNK]\n[CLS]\nhello\n"}} << "" << QStringList{"vocab.txt: has no line '[SEP]'"};
  QTest::newRow("vocab.txt with a token twice") << Files{{"vocab.txt", "[UNK]\n[CLS]\n[SEP]\nhello\nhello\n"}} << ""
                                                << QStringList{"vocab.txt line 5: 'hello' repeats line 4"};
  QTest::newRow("vocab.txt with invalid UTF-8")
      << Files{{"vocab.txt", "[UNK]\nab\xff\n"}} << "" << QStringList{"vocab.txt line 2: invalid UTF-8 at byte 2"};
  QTest::newRow("tokenizer_config.json with a bad field")
      << Files{{"vocab.txt", "[UNK]\n[CLS]\n[SEP]\n"}, {"tokenizer_config.json", "{\n\"do_lower_case\": \"yes\"}"}}
      << "" << QStringList{"tokenizer_config.json line 2: do_lower_case: expected true or false"};
}

void TestTokenizerFiles::bad_files_are_refused_naming_file_and_field() {
  QFETCH(Files, files);
  QFETCH(QString, load);
  QFETCH(QStringList, parts);
  QTemporaryDir dir;
  for (const auto& [name, text] : files) {
    std::ofstream out(dir.filePath(QString::fromStdString(name)).toStdString(), std::ios::binary);
    out << text;
  }
  const std::string path = load.isEmpty() ? dir.path().toStdString() : dir.filePath(load).toStdString();
  std::string message = "(not refused)";
  try {
    load_tokenizer(path);
  } catch (const ConfigError& e) {
    message = e.what();
  } catch (const FormatError& e) {
    message = e.what();
  }
  for (const QString& part : parts)
    QVERIFY2(message.find(part.toStdString()) != std::string::npos,
             qPrintable("message '" + QString::fromStdString(message) + "' lacks '" + part + "'"));
}

// The smallest files of each layout work, with the older merges layout ("a b" strings).
void TestTokenizerFiles::small_handmade_files_load() {
  QTemporaryDir dir;
  const std::string json_path = dir.filePath("tokenizer.json").toStdString();
  std::ofstream(json_path) << bpe_json("{\"a\": 0, \"b\": 1, \"ab\": 2, \"Ġ\": 3, \"Ġab\": 4}", "[\"a b\", \"Ġ ab\"]");
  const auto bpe = load_tokenizer(json_path);
  QCOMPARE(bpe->encode("ab ab ba"), (std::vector<std::int32_t>{2, 4, 3, 1, 0}));
  QCOMPARE(bpe->encode("abc"),
           (std::vector<std::int32_t>{2}));  // 'c' has no id and no unk_token: dropped, as the library does
  QCOMPARE(bpe->decode({2, 4}), std::string("ab ab"));
  const std::string wp_path = dir.filePath("wp.json").toStdString();
  std::ofstream(wp_path) << wordpiece_json(kWordPieceModel);
  const auto wordpiece = load_tokenizer(wp_path);
  QCOMPARE(wordpiece->encode("A b, c"), (std::vector<std::int32_t>{3, 4, 0, 0}));  // no post-processor: no [CLS]
}

QTEST_GUILESS_MAIN(TestTokenizerFiles)
#include "test_tokenizer_files.moc"
