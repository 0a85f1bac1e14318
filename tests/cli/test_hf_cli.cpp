// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face models through the CLI: `hidden-states` against transformers
// (all-MiniLM-L6-v2, tests/fixtures/hf/minilm_hidden_states.safetensors),
// `train --init-from` end to end, and bad model directories, each refused with
// exit code 2 and a message naming the file and the cause.
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "inspect/text_hidden_states.h"
#include "io/safetensors.h"

using namespace shardscope;
namespace fs = std::filesystem;

namespace {

const std::string kHf = std::string(SHARDSCOPE_FIXTURES) + "/hf/";

// Where scripts/fetch_minilm.sh puts the model (inspect/text_hidden_states.h).
std::string minilm_dir() { return pretrained_minilm_dir(); }

// A safetensors file's tensors, to change and write back.
struct Tensors {
  std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>> all;
  explicit Tensors(const std::string& path) {
    const SafetensorsFile f = SafetensorsFile::read(path);
    for (const auto& [name, e] : f.entries()) all[name] = {e.shape, f.floats(name)};
  }
  void write(const std::string& path) const {
    std::vector<SafetensorsTensorOut> out;
    for (const auto& [name, t] : all) out.push_back({name, "F32", t.first, t.second.data()});
    write_safetensors({"", path}, out, {{"format", "pt"}});
  }
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A copy of a committed tiny model in `dir`.
void copy_model(const std::string& from, const std::string& dir) {
  fs::create_directories(dir);
  for (const char* file : {"config.json", "model.safetensors"}) fs::copy_file(from + "/" + file, dir + "/" + file);
}

// gpt2_tiny with one thing wrong, and the words the refusal must contain.
struct BadDir {
  std::string file, cause;
};

// Config keys that change the math from the GPT-2 and BERT the engine runs:
// refused, since ignoring them would print numbers transformers does not.
const std::map<std::string, std::pair<std::string, nlohmann::json>> kMathKeys = {
    {"attention unscaled", {"scale_attn_weights", false}},
    {"attention scaled by layer", {"scale_attn_by_inverse_layer_idx", true}},
    {"BERT relative positions", {"position_embedding_type", "relative_key"}},
    {"BERT as a decoder", {"is_decoder", true}}};

BadDir break_model(const std::string& dir, const std::string& how) {
  copy_model(kHf + (how.starts_with("BERT") ? "bert_tiny" : "gpt2_tiny"), dir);
  const std::string st = dir + "/model.safetensors", config = dir + "/config.json";
  if (const auto math = kMathKeys.find(how); math != kMathKeys.end()) {
    auto j = nlohmann::json::parse(read_text(config));
    j[math->second.first] = math->second.second;
    write_text(config, j.dump());
    return {"config.json", math->second.first + ": "};
  }
  if (how == "pytorch_model.bin only") {
    fs::remove(st);
    write_text(dir + "/pytorch_model.bin", "PK");
    return {"pytorch_model.bin", "safe_serialization=True"};
  }
  if (how == "no weights") {
    fs::remove(st);
    return {"model.safetensors", "missing"};
  }
  if (how == "truncated safetensors") {
    fs::resize_file(st, fs::file_size(st) / 2);
    return {"model.safetensors", "data_offsets"};
  }
  if (how == "sharded safetensors") {
    fs::rename(st, dir + "/model-00001-of-00002.safetensors");
    write_text(dir + "/model.safetensors.index.json", "{}");
    return {"model.safetensors.index.json", "sharded checkpoints are not read"};
  }
  if (how == "llama config") {
    write_text(config, R"({"model_type": "llama", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 32})");
    return {"config.json", "model_type 'llama'"};
  }
  if (how == "bad config.json") {
    write_text(config, "{\"model_type\": \"gpt2\", \"n_embd\": \"32\"");
    return {"config.json", "line 1, column 38"};
  }
  if (how == "config without n_layer") {
    auto j = nlohmann::json::parse(read_text(config));
    j.erase("n_layer");
    write_text(config, j.dump());
    return {"config.json", "n_layer"};
  }
  if (how == "MLP not 4h" || how == "untied head in config" || how == "huge layer_norm_epsilon") {
    auto j = nlohmann::json::parse(read_text(config));
    const char* key = how == "MLP not 4h"              ? "n_inner"
                      : how == "untied head in config" ? "tie_word_embeddings"
                                                       : "layer_norm_epsilon";
    j[key] = how == "MLP not 4h"              ? nlohmann::json(64)
             : how == "untied head in config" ? nlohmann::json(false)
                                              : nlohmann::json(1e300);
    write_text(config, j.dump());
    return {"config.json", how == "MLP not 4h"              ? "(n_inner 64, not 4 x n_embd = 128)"
                           : how == "untied head in config" ? "(tie_word_embeddings false)"
                                                            : "layer_norm_epsilon: 1e+300 is out of range (0, 1]"};
  }
  if (how == "unsupported activation") {
    auto j = nlohmann::json::parse(read_text(config));
    j["activation_function"] = "relu";
    write_text(config, j.dump());
    return {"config.json", "relu"};
  }
  Tensors t(st);
  if (how == "missing tensor") {
    t.all.erase("transformer.h.1.ln_2.bias");
    t.write(st);
    return {"model.safetensors", "missing tensor 'transformer.h.1.ln_2.bias'"};
  }
  if (how == "unexpected tensor") {
    t.all["transformer.h.2.ln_1.weight"] = {{32}, std::vector<float>(32, 1.0f)};
    t.write(st);
    return {"model.safetensors", "unexpected tensor 'transformer.h.2.ln_1.weight'"};
  }
  if (how == "wrong shape") {
    t.all["transformer.wpe.weight"] = {{16, 32}, std::vector<float>(16 * 32, 0.0f)};
    t.write(st);
    return {"model.safetensors", "'transformer.wpe.weight' has shape (16, 32), config.json says (32, 32)"};
  }
  if (how == "integer weights") {
    const auto& wpe = t.all.at("transformer.wpe.weight");
    std::vector<std::int32_t> ints(wpe.second.size(), 1);
    std::vector<SafetensorsTensorOut> out;
    for (const auto& [name, v] : t.all)
      out.push_back({name, name == "transformer.wpe.weight" ? "I32" : "F32", v.first,
                     name == "transformer.wpe.weight" ? static_cast<const void*>(ints.data()) : v.second.data()});
    write_safetensors({"", st}, out, {});
    return {"model.safetensors", "'transformer.wpe.weight' is I32; weights must be F32, F16 or BF16"};
  }
  if (how == "untied lm_head") {
    auto wte = t.all.at("transformer.wte.weight");
    wte.second[5] += 1.0f;
    t.all["lm_head.weight"] = wte;
    t.write(st);
    return {"model.safetensors", "'lm_head.weight' differs"};
  }
  QTest::qFail("unknown case", __FILE__, __LINE__);
  return {};
}

}  // namespace

class TestHfCli : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void hidden_states_match_transformers();
  void hidden_states_layers_and_json();
  void init_from_trains_and_says_where_weights_came_from();
  void init_from_with_model_is_refused();
  void bad_model_dirs_exit_2_data();
  void bad_model_dirs_exit_2();
};

void TestHfCli::hidden_states_match_transformers() {
  const std::string dir = minilm_dir();
  if (!fs::exists(dir + "/model.safetensors"))
    QSKIP(qPrintable(QString::fromStdString("all-MiniLM-L6-v2 is not fetched (" + dir +
                                            "): run scripts/fetch_minilm.sh to compare its hidden states")));
  const SafetensorsFile ref = SafetensorsFile::read(kHf + "minilm_hidden_states.safetensors");
  const auto sentences = nlohmann::json::parse(ref.metadata().at("sentences")).get<std::vector<std::string>>();
  const QTemporaryDir temp;
  for (std::size_t k = 0; k < sentences.size(); ++k) {
    const QString out = temp.filePath(QString("s%1.safetensors").arg(k));
    const CliResult r = run_cli({"hidden-states", "--model", QString::fromStdString(dir), "--text",
                                 QString::fromStdString(sentences[k]), "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const SafetensorsFile got = SafetensorsFile::read(out.toStdString());
    std::string key = "s";
    key += std::to_string(k);
    QCOMPARE(got.ints("input_ids"), ref.ints(key + ".input_ids"));
    const std::vector<float> expect = ref.floats(key + ".hidden_states");  // (L + 1, T, C)
    const std::size_t per = expect.size() / 7;
    for (std::size_t l = 0; l <= 6; ++l) {
      const std::vector<float> state = got.floats("hidden_states." + std::to_string(l));
      QCOMPARE(state.size(), per);
      double worst = 0.0;
      for (std::size_t i = 0; i < per; ++i) worst = std::max(worst, std::fabs(double(state[i]) - expect[l * per + i]));
      QVERIFY2(worst <= 1e-4,
               qPrintable(QString("sentence %1 state %2: max abs difference %3").arg(k).arg(l).arg(worst)));
    }
  }
}

void TestHfCli::hidden_states_layers_and_json() {
  const std::string dir = minilm_dir();
  if (!fs::exists(dir + "/model.safetensors"))
    QSKIP(qPrintable(
        QString::fromStdString("all-MiniLM-L6-v2 is not fetched (" + dir + "): run scripts/fetch_minilm.sh")));
  const QTemporaryDir temp;
  const QString out = temp.filePath("two.safetensors");
  CliResult r = run_cli({"hidden-states", "--model", QString::fromStdString(dir), "--text", "Hello world", "--layers",
                         "0,6", "--out", out, "--json"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  const auto j = nlohmann::json::parse(r.out.toStdString());
  QCOMPARE(j.at("ids").get<std::vector<int>>(), (std::vector<int>{101, 7592, 2088, 102}));
  QCOMPARE(j.at("hidden_states").size(), std::size_t{2});
  QCOMPARE(j.at("hidden_states").at("6").size(), std::size_t{4});
  const SafetensorsFile got = SafetensorsFile::read(out.toStdString());
  QCOMPARE(got.entries().size(), std::size_t{3});  // input_ids, hidden_states.0, hidden_states.6
  QCOMPARE(got.floats("hidden_states.6")[5], j.at("hidden_states").at("6").at(0).at(5).get<float>());
  r = run_cli({"hidden-states", "--model", QString::fromStdString(dir), "--text", "x", "--layers", "0,7", "--json"});
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains("--layers '0,7': '7' is not a hidden-state index 0..6"), qPrintable(r.err));
  r = run_cli({"hidden-states", "--model", QString::fromStdString(dir), "--text", "x", "--layers", "2,2", "--json"});
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains("--layers '2,2': 2 is listed twice"), qPrintable(r.err));
}

void TestHfCli::init_from_trains_and_says_where_weights_came_from() {
  const CliResult r = run_cli({"train", "--init-from", QString::fromStdString(kHf + "gpt2_tiny"), "--steps", "3",
                               "--batch", "4", "--seq", "24", "--threads", "2"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("init: weights from " + QString::fromStdString(kHf) + "gpt2_tiny"), qPrintable(r.out));
  QVERIFY2(r.out.contains("vocab=300"), qPrintable(r.out));
  // A BertModel (no MLM head: bert_tiny's encoder without its "bert." prefix) gets a new head, and says so.
  const QTemporaryDir temp;
  const std::string dir = temp.path().toStdString() + "/encoder";
  copy_model(kHf + "bert_tiny", dir);
  Tensors t(dir + "/model.safetensors"), encoder(dir + "/model.safetensors");
  encoder.all.clear();
  for (const auto& [name, v] : t.all)
    if (name.starts_with("bert.")) encoder.all[name.substr(5)] = v;
  encoder.write(dir + "/model.safetensors");
  const CliResult b = run_cli({"train", "--init-from", QString::fromStdString(dir), "--steps", "1", "--batch", "4",
                               "--seq", "24", "--threads", "2"});
  QVERIFY2(b.code == 0, qPrintable(b.err));
  QVERIFY2(b.out.contains("without a masked-LM head: the head (cls.predictions) is freshly initialized"),
           qPrintable(b.out));
}

void TestHfCli::init_from_with_model_is_refused() {
  const CliResult r = run_cli(
      {"train", "--init-from", QString::fromStdString(kHf + "gpt2_tiny"), "--model", "gpt-tiny", "--steps", "1"});
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains("--model and --init-from") && r.err.contains("drop --model"), qPrintable(r.err));
}

void TestHfCli::bad_model_dirs_exit_2_data() {
  QTest::addColumn<QString>("how");
  for (const char* how : {"pytorch_model.bin only",
                          "no weights",
                          "truncated safetensors",
                          "bad config.json",
                          "config without n_layer",
                          "unsupported activation",
                          "missing tensor",
                          "unexpected tensor",
                          "wrong shape",
                          "untied lm_head",
                          "sharded safetensors",
                          "llama config",
                          "integer weights",
                          "attention unscaled",
                          "attention scaled by layer",
                          "BERT relative positions",
                          "BERT as a decoder",
                          "MLP not 4h",
                          "untied head in config",
                          "huge layer_norm_epsilon"})
    QTest::newRow(how) << how;
}

// Through both commands that read a model directory.
void TestHfCli::bad_model_dirs_exit_2() {
  QFETCH(QString, how);
  const QTemporaryDir temp;
  const std::string dir = temp.path().toStdString() + "/model";
  const BadDir bad = break_model(dir, how.toStdString());
  const QString where = QString::fromStdString(dir + "/" + bad.file);
  for (const QStringList& args :
       {QStringList{"train", "--init-from", QString::fromStdString(dir), "--steps", "1", "--seq", "24"},
        QStringList{"hidden-states", "--model", QString::fromStdString(dir), "--text", "x", "--json"}}) {
    const CliResult r = run_cli(args);
    QVERIFY2(r.code == 2, qPrintable(QString("%1: exit %2: %3").arg(args[0]).arg(r.code).arg(r.err)));
    QVERIFY2(r.err.contains(where) && r.err.contains(QString::fromStdString(bad.cause)),
             qPrintable(QString("%1: expected '%2' and '%3' in: %4")
                            .arg(args[0], where, QString::fromStdString(bad.cause), r.err)));
  }
}

QTEST_GUILESS_MAIN(TestHfCli)
#include "test_hf_cli.moc"
