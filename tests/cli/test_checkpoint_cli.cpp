// SPDX-License-Identifier: GPL-3.0-or-later
// `train --save-dir/--save-every/--resume` as a user runs them: a resumed run
// prints the losses of the run that never stopped; a run killed with SIGKILL
// at any moment (mid-step or mid-save) leaves only complete step directories,
// and the newest resumes; damaged or mismatched checkpoints are refused with
// exit 2, naming the file and the reason.
#include <sys/resource.h>
#include <sys/stat.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_runner.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using shardscope::fnv1a64;

namespace {

const QStringList kRun = {"train", "--model", "gpt-tiny", "--batch",   "8", "--seq",    "16", "--dp",
                          "2",     "--zero",  "1",        "--threads", "2", "--warmup", "1"};

QStringList run_args(const QStringList& more) {
  return kRun + more;
}

std::vector<double> metric_losses(const QString& path) {
  std::vector<double> losses;
  std::ifstream in(path.toStdString());
  for (std::string line; std::getline(in, line);)
    losses.push_back(QJsonDocument::fromJson(QByteArray::fromStdString(line)).object().value("loss").toDouble());
  return losses;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

nlohmann::json read_manifest(const fs::path& dir) {
  return nlohmann::json::parse(read_all(dir / "manifest.json"));
}
void write_manifest(const fs::path& dir, const nlohmann::json& m) {
  write_all(dir / "manifest.json", m.dump(1));
}

// After editing a rank file: its size and checksum in the manifest, so only the edit itself is at fault.
void reseal(const fs::path& dir, int file) {
  nlohmann::json m = read_manifest(dir);
  const std::string bytes = read_all(dir / m["files"][file]["name"].get<std::string>());
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(bytes.data(), bytes.size())));
  m["files"][file]["bytes"] = bytes.size();
  m["files"][file]["fnv1a64"] = hex;
  write_manifest(dir, m);
}

// The data section's first byte of a safetensors file.
std::size_t data_start(const std::string& bytes) {
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return 8 + static_cast<std::size_t>(n);
}

struct BadCase {
  const char* name;
  std::function<void(const fs::path& dir)> damage;
  QStringList expected;  // in the error message
  QStringList extra_args = {};
};

std::vector<BadCase> bad_cases() {
  using J = nlohmann::json;
  const auto edit = [](std::function<void(J&)> f) {
    return [f](const fs::path& d) {
      J m = read_manifest(d);
      f(m);
      write_manifest(d, m);
    };
  };
  return {
      {"truncated rank file",
       [](const fs::path& d) { fs::resize_file(d / "rank-0.safetensors", 1000); },
       {"rank-0.safetensors", "1000 bytes", "truncated"}},
      {"flipped byte",
       [](const fs::path& d) {
         std::string b = read_all(d / "rank-1.safetensors");
         b[b.size() / 2] ^= 0x40;
         write_all(d / "rank-1.safetensors", b);
       },
       {"rank-1.safetensors", "checksum"}},
      {"missing rank file",
       [](const fs::path& d) { fs::remove(d / "rank-1.safetensors"); },
       {"rank-1.safetensors", "missing"}},
      {"rank file is a directory",
       [](const fs::path& d) {
         fs::remove(d / "rank-0.safetensors");
         fs::create_directory(d / "rank-0.safetensors");
       },
       {"rank-0.safetensors", "is a directory"}},
      {"empty manifest",
       [](const fs::path& d) { write_all(d / "manifest.json", ""); },
       {"manifest.json", "not valid JSON"}},
      {"manifest is a directory",
       [](const fs::path& d) {
         fs::remove(d / "manifest.json");
         fs::create_directory(d / "manifest.json");
       },
       {"manifest.json", "is a directory"}},
      {"no manifest", [](const fs::path& d) { fs::remove(d / "manifest.json"); }, {"no checkpoint here"}},
      {"wrong format version", edit([](J& m) { m["format_version"] = 2; }), {"manifest.json", "format_version"}},
      {"not a checkpoint", edit([](J& m) { m["format"] = "other"; }), {"manifest.json", "'format'"}},
      {"other model", edit([](J& m) { m["model"]["channels"] = 256; }), {"manifest.json", "model", "--model gpt-tiny"}},
      {"wrong shape",
       edit([](J& m) {
         m["parameters"][0][1] = J::array({1, 1});
       }),
       {"manifest.json", "field 'parameters[0]'", "'embed.tokens' of shape [1, 1] is not --model gpt-tiny's"}},
      // 2^34 elements (x 3 states x 4 bytes: 192 GiB) are checked against the model before anything is allocated.
      {"shape of 2^34 elements",
       edit([](J& m) {
         m["parameters"][1][1] = J::array({131072, 131072});
       }),
       {"manifest.json", "field 'parameters[1]'", "of shape [131072, 131072] is not --model gpt-tiny's"}},
      {"shape past 64 bits",
       edit([](J& m) {
         m["parameters"][0][1] = J::array({4294967296, 4294967297});
       }),
       {"manifest.json", "field 'parameters[0][1]'", "multiply to more than 2^63 - 1 elements"}},
      {"parameter dropped",
       edit([](J& m) { m["parameters"].erase(m["parameters"].size() - 1); }),
       {"manifest.json", "field 'parameters[", "missing"}},
      {"manifest is a FIFO",
       [](const fs::path& d) {
         fs::remove(d / "manifest.json");
         ::mkfifo((d / "manifest.json").c_str(), 0600);
       },
       {"manifest.json", "not a regular file"}},
      {"missing step", edit([](J& m) { m.erase("step"); }), {"manifest.json", "'step'", "missing"}},
      {"nested garbage",
       edit([](J& m) {
         J deep = J::array();
         for (int i = 0; i < 40; ++i) deep = J::array({deep});
         m["files"] = deep;
       }),
       {"manifest.json", "files"}},
      {"negative step", edit([](J& m) { m["step"] = -3; }), {"manifest.json", "'step'"}},
      {"checksum not hex", edit([](J& m) { m["files"][0]["fnv1a64"] = "zz"; }), {"manifest.json", "fnv1a64"}},
      {"bytes a string", edit([](J& m) { m["files"][1]["bytes"] = "5"; }), {"manifest.json", "files[1].bytes"}},
      {"slice twice",
       edit([](J& m) { m["files"][0]["slices"].push_back(m["files"][0]["slices"][0]); }),
       {"manifest.json", "listed twice"}},
      {"reversed slice", edit([](J& m) { m["files"][0]["slices"][0][2] = 0; }), {"manifest.json", "reversed"}},
      {"slice dropped", edit([](J& m) { m["files"][0]["slices"].erase(0); }), {"rank-0.safetensors", "tensors"}},
      {"rank file dropped", edit([](J& m) { m["files"].erase(1); }), {"manifest.json", "in no rank file"}},
      {"unknown parameter",
       edit([](J& m) { m["files"][0]["slices"][0][0] = "embed.tokenz"; }),
       {"rank-0.safetensors", "embed.tokenz", "not a parameter"}},
      {"NaN in a tensor",
       [](const fs::path& d) {
         std::string b = read_all(d / "rank-0.safetensors");
         const float nan = std::numeric_limits<float>::quiet_NaN();
         std::memcpy(b.data() + data_start(b), &nan, 4);
         write_all(d / "rank-0.safetensors", b);
         reseal(d, 0);
       },
       {"rank-0.safetensors", "not finite"}},
      {"wrong dtype",
       [](const fs::path& d) {
         std::string b = read_all(d / "rank-1.safetensors");
         b.replace(b.find("\"F32\""), 5, "\"I32\"");
         write_all(d / "rank-1.safetensors", b);
         reseal(d, 1);
       },
       {"rank-1.safetensors", "I32", "expected F32"}},
      {"header lies about its length",
       [](const fs::path& d) {
         std::string b = read_all(d / "rank-0.safetensors");
         const std::uint64_t n = 1ull << 40;
         std::memcpy(b.data(), &n, 8);
         write_all(d / "rank-0.safetensors", b);
         reseal(d, 0);
       },
       {"rank-0.safetensors"}},
      {"negative scale", edit([](J& m) { m["loss_scaler"]["scale"] = -1.0; }), {"manifest.json", "loss_scaler.scale"}},
      {"adamw ahead of step",
       edit([](J& m) { m["optimizer"]["adamw_steps"] = 99; }),
       {"manifest.json", "optimizer.adamw_steps"}},
      {"data position off",
       edit([](J& m) { m["data_position"]["next_step"] = 0; }),
       {"manifest.json", "data_position.next_step"}},
      {"top level array",
       [](const fs::path& d) { write_all(d / "manifest.json", "[1, 2]"); },
       {"manifest.json", "(top level)"}},
      {"file name with a slash",
       edit([](J& m) { m["files"][0]["name"] = "../rank-0.safetensors"; }),
       {"manifest.json", "files[0].name"}},
      {"other seed", [](const fs::path&) {}, {"manifest.json", "--seed 1337", "--seed 5"}, {"--seed", "5"}},
      {"other data",
       [](const fs::path&) {},
       {"--data", "training tokens"},
       {"--data", SHARDSCOPE_FIXTURES "/../../README.md"}},
      {"already at the end", [](const fs::path&) {}, {"--steps 1", "already at step 1"}, {"--steps", "1"}},
  };
}

}  // namespace

class TestCheckpointCli : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void resumed_run_prints_the_same_losses();
  void a_mixture_of_experts_run_resumes();
  void kill_9_leaves_only_complete_checkpoints();
  void a_save_killed_before_its_commit_is_ignored();
  void bad_checkpoints_are_refused();
  void a_failed_save_keeps_the_last_checkpoint();
  void a_save_that_cannot_happen_is_refused_before_training();
  void an_init_from_run_resumes();
  void other_text_of_the_same_length_is_refused();
};

void TestCheckpointCli::resumed_run_prints_the_same_losses() {
  QTemporaryDir dir;
  const QString root = dir.filePath("ckpt"), full = dir.filePath("full.jsonl"), part = dir.filePath("part.jsonl");
  const CliResult a =
      run_cli(run_args({"--steps", "4", "--save-dir", root, "--save-every", "2", "--metrics-out", full}));
  QVERIFY2(a.code == 0, qPrintable(a.err));
  QVERIFY(a.out.contains("checkpoint: step 2 saved to " + root + "/step-000002"));
  QVERIFY(a.out.contains("checkpoint: step 4 saved to " + root + "/step-000004"));
  QCOMPARE(a.out.count("checkpoint:"), 2);  // the end's save is step 4's: not twice
  const CliResult b = run_cli(run_args({"--steps", "4", "--resume", root + "/step-000002", "--metrics-out", part}));
  QVERIFY2(b.code == 0, qPrintable(b.err));
  QVERIFY(b.out.contains("resumed from " + root + "/step-000002 at step 2"));
  QVERIFY2(b.out.contains("done: 4 steps (3-4 in this run) in ") && b.out.contains("throughput over steps 4-4: "),
           qPrintable(b.out));  // the steps this run timed, not 2-4
  const std::vector<double> all = metric_losses(full), rest = metric_losses(part);
  QCOMPARE(all.size(), std::size_t{4});
  QCOMPARE(rest.size(), std::size_t{2});
  QVERIFY(rest[0] == all[2] && rest[1] == all[3]);  // bit for bit (the JSON holds the float exactly)
}

// gpt-tiny-moe at dp 2 x ep 2: saved at step 2, resumed at the same layout
// (bit for bit) and at ep 1 (the experts reassembled: within 2e-5); the step
// directory holds no Hugging Face weights and its manifest says why.
void TestCheckpointCli::a_mixture_of_experts_run_resumes() {
  QTemporaryDir dir;
  const QStringList moe = {"train", "--model", "gpt-tiny-moe", "--batch", "8",         "--seq", "16",       "--dp", "2",
                           "--ep",  "2",       "--steps",      "4",       "--threads", "2",     "--warmup", "1"};
  const QString root = dir.filePath("ckpt"), full = dir.filePath("full.jsonl"), part = dir.filePath("part.jsonl");
  const CliResult a = run_cli(moe + QStringList{"--save-dir", root, "--save-every", "2", "--metrics-out", full});
  QVERIFY2(a.code == 0, qPrintable(a.err));
  QVERIFY2(a.out.contains("checkpoint: step 2 saved to " + root + "/step-000002"), qPrintable(a.out));
  const fs::path step2 = (root + "/step-000002").toStdString();
  QVERIFY(!fs::exists(step2 / "model.safetensors") && !fs::exists(step2 / "config.json"));
  const nlohmann::json manifest = nlohmann::json::parse(read_all(step2 / "manifest.json"));
  QVERIFY(manifest.at("hugging_face").get<std::string>().find("mixture of experts") != std::string::npos);
  const std::vector<double> all = metric_losses(full);
  QCOMPARE(all.size(), std::size_t{4});
  for (const char* ep : {"2", "1"}) {
    QStringList args = moe;
    args[args.indexOf("--ep") + 1] = ep;
    QFile::remove(part);
    const CliResult b = run_cli(args + QStringList{"--resume", root + "/step-000002", "--metrics-out", part});
    QVERIFY2(b.code == 0, qPrintable(b.err));
    QVERIFY(b.out.contains("resumed from " + root + "/step-000002 at step 2"));
    const std::vector<double> rest = metric_losses(part);
    QCOMPARE(rest.size(), std::size_t{2});
    if (std::string(ep) == "2")
      QVERIFY(rest[0] == all[2] && rest[1] == all[3]);  // bit for bit (the JSON holds the float exactly)
    for (std::size_t i = 0; i < 2; ++i) QVERIFY2(std::abs(rest[i] - all[i + 2]) <= 2e-5 * std::abs(all[i + 2]), ep);
  }
}

// SIGKILL at moments spread over steps and saves: every step directory that
// exists is complete (its manifest, sizes and checksums check), the newest
// resumes, and another run goes on saving beside the killed one's temporaries.
void TestCheckpointCli::kill_9_leaves_only_complete_checkpoints() {
  QTemporaryDir dir;
  const QString root = dir.filePath("ckpt");
  std::set<std::string> temporaries;  // left by saves that were killed
  int kills = 0;
  for (int delay_ms : {0, 37, 90, 150, 230, 310, 420, 555, 13, 71}) {
    QStringList args = run_args({"--steps", "100000", "--save-dir", root, "--save-every", "1", "--log-every", "1"});
    bool saved = false;  // a step directory to resume from (a kill may have come before the first save ended)
    if (fs::exists(root.toStdString()))
      for (const auto& entry : fs::directory_iterator(root.toStdString()))
        saved = saved || entry.path().filename().string().starts_with("step-");
    if (saved) args << "--resume" << root;
    QProcess p;
    p.start(SHARDSCOPE_CLI, args);
    QVERIFY(p.waitForStarted());
    QByteArray out;  // the kill clock starts at the first step's line: the run is training and saving
    while (!out.contains("\nstep ") && p.waitForReadyRead(60000)) out += p.readAllStandardOutput();
    QVERIFY2(out.contains("\nstep "), (out + p.readAllStandardError()).constData());
    QThread::msleep(static_cast<unsigned long>(delay_ms));
    p.kill();  // SIGKILL
    p.waitForFinished();
    ++kills;
    if (!fs::exists(root.toStdString())) continue;  // killed before its first save
    for (const auto& entry : fs::directory_iterator(root.toStdString())) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with(".step-")) {
        temporaries.insert(name);
        continue;
      }
      QVERIFY2(name.starts_with("step-"), name.c_str());
      try {
        shardscope::read_checkpoint(entry.path().string());
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("after kill %1: %2").arg(kills).arg(e.what())));
      }
    }
  }
  const std::string newest = shardscope::find_checkpoint_dir(root.toStdString());
  const std::int64_t step = shardscope::read_checkpoint(newest).manifest.step;
  QVERIFY(step >= 1);
  const CliResult r = run_cli(run_args({"--steps", QString::number(step + 1), "--resume", root, "--save-dir", root}));
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY(r.out.contains(QString("at step %1").arg(step)));
  QVERIFY(r.out.contains(QString("checkpoint: step %1 saved").arg(step + 1)));
  qInfo("%d kills; newest checkpoint step %lld; %d saves killed midway (temporaries seen)", kills,
        static_cast<long long>(step), static_cast<int>(temporaries.size()));
  for (const auto& entry :
       fs::directory_iterator(root.toStdString()))  // the last run removed the killed saves' leftovers
    QVERIFY2(!entry.path().filename().string().starts_with(".step-"), entry.path().c_str());
}

// Killed (SHARDSCOPE_KILL_BEFORE_COMMIT, train/fault_injection.h) once the
// rank files of step 4 are written, before its manifest: the resume takes
// step 2, names the torn save, and the resumed run's losses are the run's.
void TestCheckpointCli::a_save_killed_before_its_commit_is_ignored() {
  QTemporaryDir dir;
  const QString root = dir.filePath("ckpt"), full = dir.filePath("full.jsonl"), part = dir.filePath("part.jsonl");
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("SHARDSCOPE_KILL_BEFORE_COMMIT", "4");
  const CliResult killed = run_cli(run_args({"--steps", "4", "--save-dir", root, "--save-every", "2"}), env);
  QCOMPARE(killed.code, -2);  // SIGKILL
  QVERIFY(!fs::exists(root.toStdString() + "/step-000004"));
  std::string torn;
  for (const auto& entry : fs::directory_iterator(root.toStdString()))
    if (entry.path().filename().string().starts_with(".step-000004.tmp-")) torn = entry.path().string();
  QVERIFY(!torn.empty() && fs::exists(torn + "/rank-1.safetensors") && !fs::exists(torn + "/manifest.json"));
  const CliResult r = run_cli(run_args({"--steps", "4", "--resume", root, "--metrics-out", part}));
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("resumed from " + root + "/step-000002 at step 2"), qPrintable(r.out));
  QVERIFY2(r.out.contains(QString::fromStdString("checkpoint: ignored " + torn + ": a save that never committed")),
           qPrintable(r.out));
  QCOMPARE(run_cli(run_args({"--steps", "4", "--metrics-out", full})).code, 0);  // the run never killed
  const std::vector<double> all = metric_losses(full), rest = metric_losses(part);
  QCOMPARE(all.size(), std::size_t{4});
  QCOMPARE(rest.size(), std::size_t{2});
  QVERIFY(rest[0] == all[2] && rest[1] == all[3]);
}

void TestCheckpointCli::bad_checkpoints_are_refused() {
  QTemporaryDir dir;
  const QString good = dir.filePath("good");
  const CliResult made = run_cli(run_args({"--steps", "1", "--save-dir", good}));
  QVERIFY2(made.code == 0, qPrintable(made.err));
  const fs::path step = fs::path(good.toStdString()) / "step-000001";
  int refused = 0;
  for (const BadCase& c : bad_cases()) {
    const fs::path bad = fs::path(dir.path().toStdString()) / ("bad-" + std::to_string(refused));
    fs::copy(step, bad, fs::copy_options::recursive);
    c.damage(bad);
    const CliResult r =
        run_cli(run_args(QStringList{"--steps", "3", "--resume", QString::fromStdString(bad.string())} + c.extra_args));
    QVERIFY2(r.code == 2, qPrintable(QString("%1: exit %2: %3").arg(c.name).arg(r.code).arg(r.err)));
    for (const QString& word : c.expected)
      QVERIFY2(r.err.contains(word), qPrintable(QString("%1: '%2' not in: %3").arg(c.name, word, r.err)));
    ++refused;
  }
  QVERIFY(refused >= 20);
  // The saved layout is for the reader: odd values there do not stop a resume.
  const fs::path odd = fs::path(dir.path().toStdString()) / "odd-layout";
  fs::copy(step, odd, fs::copy_options::recursive);
  nlohmann::json m = read_manifest(odd);
  m["layout"]["precision"] = nlohmann::json::array({1});
  write_manifest(odd, m);
  const CliResult resumed = run_cli(run_args({"--steps", "2", "--resume", QString::fromStdString(odd.string())}));
  QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
  const CliResult file = run_cli(run_args({"--steps", "3", "--resume", good + "/step-000001/manifest.json"}));
  QCOMPARE(file.code, 2);
  QVERIFY(file.err.contains("not a directory"));
  const CliResult nowhere = run_cli(run_args({"--steps", "3", "--save-every", "2"}));
  QCOMPARE(nowhere.code, 2);
  QVERIFY2(nowhere.err.contains("--save-every needs --save-dir"), qPrintable(nowhere.err));
}

// The checkpoint keeps a fingerprint of the tokens: a --data of the same
// length but other text (one byte changed) is refused; the same text resumes.
void TestCheckpointCli::other_text_of_the_same_length_is_refused() {
  QTemporaryDir dir;
  std::string text;
  for (int i = 0; text.size() < 8000; ++i) text += "line " + std::to_string(i) + ": the ranks train one model. ";
  std::string edited = text;
  edited[5000] = edited[5000] == 'x' ? 'y' : 'x';
  const QString saved_on = dir.filePath("a.txt"), other = dir.filePath("b.txt"), root = dir.filePath("ckpt");
  write_all(saved_on.toStdString(), text);
  write_all(other.toStdString(), edited);
  const CliResult made = run_cli(run_args({"--steps", "1", "--data", saved_on, "--save-dir", root}));
  QVERIFY2(made.code == 0, qPrintable(made.err));
  const QString step = root + "/step-000001";
  QVERIFY2(read_manifest(step.toStdString())["data"]["tokens_fnv1a64"].get<std::string>().size() == 16,
           "no token fingerprint in the manifest");
  const CliResult refused = run_cli(run_args({"--steps", "2", "--data", other, "--resume", step}));
  QCOMPARE(refused.code, 2);
  for (const QString& word : {QString("--data"), QString("other text"), other, QString("token fingerprint")})
    QVERIFY2(refused.err.contains(word), qPrintable(word + " not in: " + refused.err));
  const CliResult resumed = run_cli(run_args({"--steps", "2", "--data", saved_on, "--resume", step}));
  QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
}

// A save that cannot be written (`ulimit -f 1024`: the rank files exceed it)
// stops the run with exit 2; the checkpoint before it stays byte for byte,
// and no step directory or temporary is left.
void TestCheckpointCli::a_failed_save_keeps_the_last_checkpoint() {
  QTemporaryDir dir;
  const QString root = dir.filePath("ckpt");
  const CliResult first = run_cli(run_args({"--steps", "1", "--save-dir", root}));
  QVERIFY2(first.code == 0, qPrintable(first.err));
  const fs::path step = fs::path(root.toStdString()) / "step-000001";
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(step)) before[e.path().filename().string()] = read_all(e.path());
  QProcess p;
  p.setChildProcessModifier([] {
    const rlimit limit{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  });
  p.start(SHARDSCOPE_CLI, run_args({"--steps", "2", "--resume", root, "--save-dir", root}));
  QVERIFY(p.waitForFinished(300000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains("--save-dir") && err.contains("earlier checkpoints were left as they were"), qPrintable(err));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root.toStdString())) names.push_back(e.path().filename().string());
  QCOMPARE(names, std::vector<std::string>{"step-000001"});
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(step)) after[e.path().filename().string()] = read_all(e.path());
  QVERIFY(after == before);
  shardscope::read_checkpoint(step.string());  // still loads
}

// A save the run could only fail at its end (its step directory taken, the
// folder a file) is refused before the first step: no training is lost, and
// the checkpoint already there stays byte for byte.
void TestCheckpointCli::a_save_that_cannot_happen_is_refused_before_training() {
  QTemporaryDir dir;
  const QString root = dir.filePath("ckpt");
  const CliResult first = run_cli(run_args({"--steps", "2", "--save-dir", root}));
  QVERIFY2(first.code == 0, qPrintable(first.err));
  const fs::path step = fs::path(root.toStdString()) / "step-000002";
  const std::string before = read_all(step / "rank-0.safetensors");
  for (const QStringList& more : {QStringList{"--steps", "2", "--seed", "7"},  // the last step's save
                                  QStringList{"--steps", "4", "--save-every", "1"}}) {
    const CliResult r = run_cli(run_args(more + QStringList{"--save-dir", root, "--log-every", "1"}));
    QVERIFY2(r.code == 2, qPrintable(QString("exit %1: %2").arg(r.code).arg(r.err)));
    QVERIFY2(r.err.contains(QString::fromStdString(step.string()) + ": already exists, and this run would save step 2"),
             qPrintable(r.err));
    QVERIFY2(!r.out.contains("step      1"), qPrintable(r.out));  // refused before training
  }
  QVERIFY(read_all(step / "rank-0.safetensors") == before);
  const CliResult later = run_cli(run_args({"--steps", "3", "--save-dir", root, "--save-every", "3"}));
  QVERIFY2(later.code == 0, qPrintable(later.err));  // steps it does not save may exist
  const QString file = dir.filePath("a_file");
  QVERIFY(QFile(file).open(QIODevice::WriteOnly));
  const CliResult under_file = run_cli(run_args({"--steps", "1", "--save-dir", file + "/runs"}));
  QCOMPARE(under_file.code, 2);
  QVERIFY2(under_file.err.contains("'" + file + "' is a file, not a directory"), qPrintable(under_file.err));
  QVERIFY(!under_file.out.contains("step      1"));
}

// A run that began from a Hugging Face directory resumes with --init-from (that
// directory, or the checkpoint's own step directory, which is one too), with the
// losses of the run that never stopped; without it the model is named.
void TestCheckpointCli::an_init_from_run_resumes() {
  QTemporaryDir dir;
  const QString model = QString(SHARDSCOPE_FIXTURES) + "/hf/gpt2_tiny", root = dir.filePath("ckpt");
  const QStringList run = {"train", "--init-from", model, "--batch",  "4", "--seq",
                           "16",    "--steps",     "4",   "--warmup", "1"};
  const QString full = dir.filePath("full.jsonl");
  const CliResult a = run_cli(run + QStringList{"--save-dir", root, "--save-every", "2", "--metrics-out", full});
  QVERIFY2(a.code == 0, qPrintable(a.err));
  const std::vector<double> all = metric_losses(full);
  QCOMPARE(all.size(), std::size_t{4});
  const QString step2 = root + "/step-000002";
  for (const QString& init : {model, step2}) {
    QStringList args = run;
    args[2] = init;
    const QString part = dir.filePath("part.jsonl");
    QFile::remove(part);
    const CliResult b = run_cli(args + QStringList{"--resume", step2, "--dp", "2", "--metrics-out", part});
    QVERIFY2(b.code == 0, qPrintable(b.err));
    const std::vector<double> rest = metric_losses(part);
    QCOMPARE(rest.size(), std::size_t{2});
    QVERIFY2(std::abs(rest[0] - all[2]) < 1e-5 && std::abs(rest[1] - all[3]) < 1e-5, qPrintable(init));
  }
  const CliResult preset = run_cli({"train", "--batch", "4", "--seq", "16", "--steps", "4", "--resume", step2});
  QCOMPARE(preset.code, 2);
  QVERIFY2(preset.err.contains("is not --model gpt-tiny's") && preset.err.contains("--init-from"),
           qPrintable(preset.err));
}

QTEST_GUILESS_MAIN(TestCheckpointCli)
#include "test_checkpoint_cli.moc"
