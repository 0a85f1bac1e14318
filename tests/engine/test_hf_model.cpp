// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face model directories (io/hf_model.h) against transformers, with the
// fixtures of tests/tools/make_hf_fixtures.py (tests/fixtures/hf/):
//   - all-MiniLM-L6-v2 (scripts/fetch_minilm.sh): every hidden state of 5 English and
//     Chinese sentences within 1e-4 (max abs) of transformers', WordPiece ids identical;
//   - transformers-made tiny GPT-2 and BERT: logits and loss within 1e-4 (relative), read
//     directly and through `--init-from` (the trainer), and the first step's loss the same
//     under dp 2 ZeRO-3, pp 2 and dp 2 ZeRO-1 as on one rank;
//   - ShardScope-written directories: byte for byte the committed ones (which transformers
//     loaded with no missing or unexpected keys) and transformers' logits from them.
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/half.h"
#include "core/memory_ledger.h"
#include "core/rng.h"
#include "data/tokenizer.h"
#include "engine/test_support.h"
#include "io/hf_model.h"
#include "inspect/text_hidden_states.h"
#include "io/safetensors.h"
#include "model/hidden_states.h"
#include "model/model.h"
#include "train/trainer.h"

using namespace shardscope;
using namespace shardscope::test;
namespace fs = std::filesystem;

namespace {

const std::string kHf = std::string(SHARDSCOPE_FIXTURES) + "/hf/";

// Where scripts/fetch_minilm.sh puts the model (inspect/text_hidden_states.h).
std::string minilm_dir() { return pretrained_minilm_dir(); }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void compare(const QString& what, const float* got, const std::vector<float>& expect, double atol, double rtol) {
  std::size_t where = 0;
  const double worst = worst_mismatch(got, expect.data(), expect.size(), atol, rtol, &where);
  QVERIFY2(worst <= 1.0, qPrintable(QString("%1: element %2: got %3, transformers %4 (%5x the tolerance)")
                                        .arg(what)
                                        .arg(where)
                                        .arg(static_cast<double>(got[where]), 0, 'g', 8)
                                        .arg(static_cast<double>(expect[where]), 0, 'g', 8)
                                        .arg(worst, 0, 'g', 3)));
}

// The model on a CPU backend with the directory's weights.
struct LoadedModel {
  MemoryLedger ledger;
  std::unique_ptr<Backend> backend = make_cpu_backend({2});
  std::unique_ptr<Model> model;
  explicit LoadedModel(const HfModel& hf) : model(make_model(hf.config, *backend, ledger)) {
    std::copy(hf.parameters.begin(), hf.parameters.end(), model->params());
  }
};

// The fixture's batch: GPT-2 scores position t against t + 1, BERT its labelled positions.
struct TinyBatch {
  std::vector<std::int32_t> ids, targets;
  Batch batch() const { return Batch{1, static_cast<int>(ids.size()), ids.data(), targets.data(), nullptr, nullptr}; }
};

TinyBatch tiny_batch(const SafetensorsFile& ref, const std::string& kind) {
  TinyBatch b;
  b.ids = ref.ints(kind + ".input_ids");
  if (kind == "gpt2") {
    b.targets.assign(b.ids.begin() + 1, b.ids.end());
    b.targets.push_back(-1);
  } else {
    b.targets = ref.ints("bert.labels");
    for (auto& t : b.targets) t = t < 0 ? -1 : t;
  }
  return b;
}

// A small model of each kind, its weights drawn by ShardScope and perturbed so
// that biases and LayerNorms are not 0 and 1 (every tensor's mapping shows).
ModelConfig written_config(ModelKind kind) {
  ModelConfig c;
  c.name = kind == ModelKind::gpt ? "written-gpt2" : "written-bert";
  c.kind = kind;
  c.vocab = 300;
  c.max_seq = 32;
  c.channels = 32;
  c.layers = 2;
  c.heads = 4;
  c.ln_eps = kind == ModelKind::gpt ? 1e-5f : 1e-12f;
  c.gelu = kind == ModelKind::gpt ? math::GeluKind::tanh_approx : math::GeluKind::exact_erf;
  return c;
}

std::vector<float> written_parameters(const ModelConfig& config) {
  LoadedModel m{HfModel{"", config, HfLayout::gpt2_lm_head, std::vector<float>(ParameterLayout(config).total()), {}}};
  m.model->init_weights(7);
  std::vector<float> p(m.model->params(), m.model->params() + m.model->parameter_count());
  Rng rng(11);
  for (float& x : p) x += rng.normal(0.0f, 0.05f);
  return p;
}

RunConfig init_from_config(const std::string& dir) {
  RunConfig c;
  c.init_from = dir;
  c.steps = 1;
  c.batch = 4;
  c.seq = 24;
  c.threads = 2;
  return c;
}

float first_step_loss(const RunConfig& config) {
  Trainer trainer(config);
  return trainer.step().loss;
}

}  // namespace

class TestHfModel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void minilm_hidden_states_match_transformers();
  void tiny_models_match_transformers_data();
  void tiny_models_match_transformers();
  void init_from_evaluates_to_the_pytorch_loss_data();
  void init_from_evaluates_to_the_pytorch_loss();
  void init_from_starts_every_layout_alike_data();
  void init_from_starts_every_layout_alike();
  void written_dirs_match_the_committed_ones();
  void name_map_covers_every_parameter_once();
  void minilm_masked_lm_fine_tune_lowers_the_held_out_loss();
  void sixteen_bit_weights_are_widened_data();
  void sixteen_bit_weights_are_widened();
};

void TestHfModel::minilm_hidden_states_match_transformers() {
  const std::string dir = minilm_dir();
  if (!fs::exists(dir + "/model.safetensors"))
    QSKIP(qPrintable(QString::fromStdString("all-MiniLM-L6-v2 is not fetched (" + dir +
                                            "): run scripts/fetch_minilm.sh to compare its hidden states")));
  const SafetensorsFile ref = SafetensorsFile::read(kHf + "minilm_hidden_states.safetensors");
  const auto sentences = nlohmann::json::parse(ref.metadata().at("sentences")).get<std::vector<std::string>>();
  QCOMPARE(sentences.size(), std::size_t{5});
  const HfModel hf = read_hf_model_dir(dir);
  QCOMPARE(hf.layout, HfLayout::bert_model);
  QCOMPARE(hf.notes.size(), std::size_t{1});  // the MLM head is new, and the load says so
  LoadedModel m(hf);
  const auto tokenizer = load_tokenizer(dir);
  for (std::size_t k = 0; k < sentences.size(); ++k) {
    std::string key = "s";
    key += std::to_string(k);
    const std::vector<std::int32_t> ids = tokenizer->encode(sentences[k]);
    QCOMPARE(ids, ref.ints(key + ".input_ids"));
    const HiddenStates hs = compute_hidden_states(*m.model, ids);
    const std::vector<float> expect = ref.floats(key + ".hidden_states");  // (L + 1, T, C)
    const std::size_t per = ids.size() * static_cast<std::size_t>(hs.channels);
    QCOMPARE(expect.size(), per * hs.states.size());
    for (std::size_t l = 0; l < hs.states.size(); ++l)
      compare(QString("'%1' hidden state %2").arg(QString::fromStdString(sentences[k])).arg(l), hs.states[l].data(),
              std::vector<float>(expect.begin() + static_cast<std::ptrdiff_t>(l * per),
                                 expect.begin() + static_cast<std::ptrdiff_t>((l + 1) * per)),
              1e-4, 0.0);
  }
}

void TestHfModel::tiny_models_match_transformers_data() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("gpt2") << "gpt2";
  QTest::newRow("bert") << "bert";
}

void TestHfModel::tiny_models_match_transformers() {
  QFETCH(QString, kind);
  const SafetensorsFile ref = SafetensorsFile::read(kHf + "tiny_reference.safetensors");
  const HfModel hf = read_hf_model_dir(kHf + kind.toStdString() + "_tiny");
  QCOMPARE(hf.layout, kind == "gpt2" ? HfLayout::gpt2_lm_head : HfLayout::bert_masked_lm);
  QVERIFY(hf.notes.empty());
  LoadedModel m(hf);
  const TinyBatch b = tiny_batch(ref, kind.toStdString());
  const float loss = m.model->forward(b.batch());
  compare("logits", m.model->activations().logits, ref.floats(kind.toStdString() + ".logits"), 1e-5, 1e-4);
  compare("loss", &loss, ref.floats(kind.toStdString() + ".loss"), 0.0, 1e-4);
  // compute_hidden_states in output_hidden_states' order (GPT-2's last one after ln_f).
  const HiddenStates hs = compute_hidden_states(*m.model, b.ids);
  const std::vector<float> expect = ref.floats(kind.toStdString() + ".hidden_states");  // (L + 1, T, C)
  const std::size_t per = b.ids.size() * static_cast<std::size_t>(hs.channels);
  QCOMPARE(expect.size(), per * hs.states.size());
  for (std::size_t l = 0; l < hs.states.size(); ++l)
    compare(QString("hidden state %1").arg(l), hs.states[l].data(),
            std::vector<float>(expect.begin() + static_cast<std::ptrdiff_t>(l * per),
                               expect.begin() + static_cast<std::ptrdiff_t>((l + 1) * per)),
            1e-4, 0.0);
}

void TestHfModel::init_from_evaluates_to_the_pytorch_loss_data() {
  tiny_models_match_transformers_data();
}

// The trainer's ranks start from the directory's weights: its model scores the
// fixture's sequence as PyTorch did, and so does a pipeline's stage pair.
void TestHfModel::init_from_evaluates_to_the_pytorch_loss() {
  QFETCH(QString, kind);
  const SafetensorsFile ref = SafetensorsFile::read(kHf + "tiny_reference.safetensors");
  const TinyBatch b = tiny_batch(ref, kind.toStdString());
  const float expect = ref.floats(kind.toStdString() + ".loss")[0];
  Trainer trainer(init_from_config(kHf + kind.toStdString() + "_tiny"));
  QVERIFY(trainer.init_note().find("weights from") != std::string::npos);
  const float loss = trainer.model(0).forward(b.batch());
  QVERIFY2(std::fabs(loss - expect) <= 1e-4f * expect, qPrintable(QString("%1 vs PyTorch %2").arg(loss).arg(expect)));
}

void TestHfModel::init_from_starts_every_layout_alike_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("bf16");
  QTest::newRow("gpt2 dp 2 zero-3") << "gpt2" << 2 << 3 << 1 << 0;
  QTest::newRow("gpt2 pp 2") << "gpt2" << 1 << 0 << 2 << 0;
  QTest::newRow("gpt2 dp 2 zero-1") << "gpt2" << 2 << 1 << 1 << 0;
  QTest::newRow("gpt2 bf16 dp 2 zero-3") << "gpt2" << 2 << 3 << 1 << 1;
  QTest::newRow("bert dp 2 zero-3") << "bert" << 2 << 3 << 1 << 0;
  QTest::newRow("bert pp 2") << "bert" << 1 << 0 << 2 << 0;
  QTest::newRow("bert bf16 dp 2 zero-2") << "bert" << 2 << 2 << 1 << 1;
}

void TestHfModel::init_from_starts_every_layout_alike() {
  QFETCH(QString, kind);
  QFETCH(int, dp);
  QFETCH(int, zero);
  QFETCH(int, pp);
  QFETCH(int, bf16);
  RunConfig single = init_from_config(kHf + kind.toStdString() + "_tiny");
  if (bf16) single.precision = Precision::bf16;  // both runs: the loaded weights rounded to 16 bits alike
  RunConfig parallel = single;
  parallel.layout[Axis::dp] = dp;
  parallel.zero_stage = zero;
  parallel.layout[Axis::pp] = pp;
  parallel.micro_batches = pp;
  const float a = first_step_loss(single), b = first_step_loss(parallel);
  QVERIFY2(std::fabs(b - a) < 1e-5f * a, qPrintable(QString("%1 vs one rank %2").arg(b).arg(a)));
  // The same run from a fresh init of the same shape scores differently: the weights were loaded.
  RunConfig fresh = single;
  fresh.init_from.clear();
  fresh.model = kind == "gpt2" ? "gpt-tiny" : "bert-tiny";
  QVERIFY(std::fabs(first_step_loss(fresh) - a) > 1e-3f);
}

// ShardScope writes the committed directories byte for byte (so the logits
// transformers computed from them still apply), reads them back unchanged, and
// its logits equal transformers'. SHARDSCOPE_HF_FIXTURE_OUT: write them there
// instead (make_hf_fixtures.py regenerates the fixtures so).
void TestHfModel::written_dirs_match_the_committed_ones() {
  const char* regenerate = std::getenv("SHARDSCOPE_HF_FIXTURE_OUT");
  if (regenerate != nullptr) {
    for (const auto& [kind, name] : {std::pair{ModelKind::gpt, "gpt2"}, std::pair{ModelKind::bert, "bert"}})
      write_hf_model_dir(std::string(regenerate) + "/shardscope_" + name, written_config(kind),
                         written_parameters(written_config(kind)).data());
    return;
  }
  const QTemporaryDir temp;
  const std::string out = temp.path().toStdString();
  const SafetensorsFile logits = SafetensorsFile::read(kHf + "shardscope_logits.safetensors");
  for (const auto& [kind, name] : {std::pair{ModelKind::gpt, "gpt2"}, std::pair{ModelKind::bert, "bert"}}) {
    const ModelConfig config = written_config(kind);
    const std::vector<float> params = written_parameters(config);
    const std::string dir = out + "/shardscope_" + name;
    write_hf_model_dir(dir, config, params.data());
    for (const char* file : {"config.json", "model.safetensors"})
      QVERIFY2(read_bytes(dir + "/" + file) == read_bytes(kHf + "shardscope_" + name + "/" + file),
               qPrintable(QString("%1/%2 differs from the committed fixture").arg(QString::fromStdString(dir), file)));
    const HfModel back = read_hf_model_dir(dir);
    QCOMPARE(back.layout, kind == ModelKind::gpt ? HfLayout::gpt2_lm_head : HfLayout::bert_masked_lm);
    QVERIFY(back.parameters == params);
    LoadedModel m(back);
    const std::vector<std::int32_t> ids = logits.ints("input_ids");
    m.model->forward(Batch{1, static_cast<int>(ids.size()), ids.data(), nullptr, nullptr, nullptr});
    compare(QString("%1 logits").arg(name), m.model->activations().logits, logits.floats(std::string(name) + ".logits"),
            1e-4, 0.0);
  }
}

// Each ShardScope parameter element is written by exactly one HF tensor.
void TestHfModel::name_map_covers_every_parameter_once() {
  for (const HfLayout layout : {HfLayout::gpt2_lm_head, HfLayout::gpt2_model, HfLayout::bert_masked_lm}) {
    ModelConfig config = written_config(layout == HfLayout::bert_masked_lm ? ModelKind::bert : ModelKind::gpt);
    config.pooler = layout == HfLayout::bert_masked_lm;
    const ParameterLayout ours(config);
    std::vector<int> covered(static_cast<std::size_t>(ours.total()), 0);
    for (const HfTensor& t : hf_tensors(config, layout)) {
      std::int64_t n = 1;
      for (std::int64_t d : t.hf_shape) n *= d;
      const ParameterEntry& e = ours.find(t.ours);
      QVERIFY(t.offset + n <= e.numel);
      for (std::int64_t i = 0; i < n; ++i) ++covered[static_cast<std::size_t>(e.offset + t.offset + i)];
    }
    QVERIFY(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
  }
}

// --init-from all-MiniLM-L6-v2 reads the shipped corpus with its WordPiece
// tokenizer; 50 MLM steps lower the held-out loss (its MLM head starts fresh).
void TestHfModel::minilm_masked_lm_fine_tune_lowers_the_held_out_loss() {
  const std::string dir = minilm_dir();
  if (!fs::exists(dir + "/model.safetensors"))
    QSKIP(qPrintable(QString::fromStdString("all-MiniLM-L6-v2 is not fetched (" + dir +
                                            "): run scripts/fetch_minilm.sh to fine-tune it")));
  RunConfig c = init_from_config(dir);
  c.steps = 50;
  c.seq = 32;
  c.lr = 1e-4f;
  c.eval_batches = 4;
  Trainer trainer(c);
  QCOMPARE(trainer.dataset().token_kind(), std::string("wordpiece tokens"));
  // WordPiece: about 4 bytes of the corpus a token, so far fewer tokens than bytes.
  QVERIFY(trainer.dataset().tokens(Split::train) < 600'000);
  const float before = trainer.evaluate();
  trainer.run([](const StepMetrics&) {});
  const float after = trainer.evaluate();
  qInfo("held-out MLM loss %.4f -> %.4f after 50 steps", static_cast<double>(before), static_cast<double>(after));
  QVERIFY2(after < before - 1.0f, qPrintable(QString("held-out MLM loss %1 -> %2").arg(before).arg(after)));
}

void TestHfModel::sixteen_bit_weights_are_widened_data() {
  QTest::addColumn<int>("bf16");
  QTest::newRow("F16") << 0;
  QTest::newRow("BF16") << 1;
}

// gpt2_tiny saved in 16 bits reads as its fp32 values rounded to 16 bits, exactly.
void TestHfModel::sixteen_bit_weights_are_widened() {
  QFETCH(int, bf16);
  const DType dtype = bf16 ? DType::bf16 : DType::f16;
  const QTemporaryDir temp;
  const std::string dir = temp.path().toStdString();
  fs::copy_file(kHf + "gpt2_tiny/config.json", dir + "/config.json");
  const SafetensorsFile f32 = SafetensorsFile::read(kHf + "gpt2_tiny/model.safetensors");
  std::vector<std::vector<std::uint16_t>> bits;
  std::vector<SafetensorsTensorOut> out;
  bits.reserve(f32.entries().size());
  for (const auto& [name, e] : f32.entries()) {
    const std::vector<float> v = f32.floats(name);
    half::narrow(dtype, v.data(), bits.emplace_back(v.size()).data(), e.numel());
    out.push_back({name, bf16 ? "BF16" : "F16", e.shape, bits.back().data()});
  }
  write_safetensors({"", dir + "/model.safetensors"}, out, {{"format", "pt"}});
  const HfModel wide = read_hf_model_dir(kHf + "gpt2_tiny"), narrow = read_hf_model_dir(dir);
  std::vector<std::uint16_t> rounded(wide.parameters.size());
  std::vector<float> expect(wide.parameters.size());
  half::narrow(dtype, wide.parameters.data(), rounded.data(), static_cast<std::int64_t>(rounded.size()));
  half::widen(dtype, rounded.data(), expect.data(), static_cast<std::int64_t>(rounded.size()));
  QVERIFY(narrow.parameters == expect);
  QVERIFY(narrow.parameters != wide.parameters);
}

QTEST_GUILESS_MAIN(TestHfModel)
#include "test_hf_model.moc"
