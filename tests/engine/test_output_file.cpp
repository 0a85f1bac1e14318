// SPDX-License-Identifier: GPL-3.0-or-later
// OutputFile (core/output_file.h): a file is written to a unique temporary
// beside its path and renamed over it only on commit; nothing but a regular
// file is replaced; an output is never an input or another output; a write
// error is reported with the OS error, and the old file stays as it was.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/output_file.h"
#include "events/recording.h"

using namespace shardscope;
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The names in a directory, sorted.
std::vector<std::string> names_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The message of the OutputError `fn` throws, or "" if it throws none.
template <typename Fn>
std::string output_error(Fn fn) {
  try {
    fn();
  } catch (const OutputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestOutputFile : public QObject {
  Q_OBJECT

  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private Q_SLOTS:
  void init() {
    for (const auto& entry : fs::directory_iterator(dir_.path().toStdString())) fs::remove_all(entry.path());
  }
  void commit_writes_through_a_unique_temporary();
  void uncommitted_file_leaves_the_old_one();
  void commit_keeps_the_replaced_files_permissions();
  void refuses_what_is_not_a_regular_file();
  void outputs_never_clobber_inputs_or_each_other();
  void stream_errors_surface_at_commit();
  void write_error_names_the_os_error();
  void require_regular_input_refuses_a_fifo();
  void recording_writer_commits_on_close_and_abandons_on_request();

 private:
  QTemporaryDir dir_;
};

void TestOutputFile::commit_writes_through_a_unique_temporary() {
  const std::string target = path("out.txt");
  write_file(path("out.txt.tmp"), "a file that only looks like a temporary");
  write_file(path("out.txt.part"), "another");
  OutputFile out({"--out", target});
  const std::string temp = out.temp_path();
  QCOMPARE(fs::path(temp).parent_path(), fs::path(target).parent_path());
  QVERIFY2(temp.rfind(target + ".", 0) == 0 && temp.size() == target.size() + 12 && temp.ends_with(".part"),
           temp.c_str());
  out.write("hello ");
  out.stream() << "world" << 42;
  QVERIFY(!fs::exists(target));  // nothing at the path until the commit
  out.commit();
  QCOMPARE(read_file(target), std::string("hello world42"));
  QVERIFY(!fs::exists(temp));
  QVERIFY(out.finished());
  QCOMPARE(read_file(path("out.txt.tmp")), std::string("a file that only looks like a temporary"));
  QCOMPARE(read_file(path("out.txt.part")), std::string("another"));
  QCOMPARE(names_in(dir_.path().toStdString()), (std::vector<std::string>{"out.txt", "out.txt.part", "out.txt.tmp"}));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, out.write("more"));
}

void TestOutputFile::uncommitted_file_leaves_the_old_one() {
  const std::string target = path("keep.txt");
  write_file(target, "old");
  std::string temp;
  {
    OutputFile out({"--out", target});
    temp = out.temp_path();
    out.write("new, but never committed");
    QVERIFY(fs::exists(temp));
  }
  QCOMPARE(read_file(target), std::string("old"));
  QVERIFY(!fs::exists(temp));
  OutputFile twice({"--out", target});
  twice.abandon();
  twice.abandon();  // harmless
  QCOMPARE(names_in(dir_.path().toStdString()), std::vector<std::string>{"keep.txt"});
}

void TestOutputFile::commit_keeps_the_replaced_files_permissions() {
  const std::string existing = path("mode.txt"), fresh = path("fresh.txt");
  write_file(existing, "x");
  ::chmod(existing.c_str(), 0640);
  OutputFile a({"", existing});
  a.write("y");
  a.commit();
  struct stat st {};
  QCOMPARE(::stat(existing.c_str(), &st), 0);
  QCOMPARE(st.st_mode & 0777, 0640u);
  const mode_t mask = ::umask(022);
  OutputFile b({"", fresh});  // a new file: 0666 under the umask, not mkstemp's 0600
  b.commit();
  ::umask(mask);
  QCOMPARE(::stat(fresh.c_str(), &st), 0);
  QCOMPARE(st.st_mode & 0777, 0644u);
}

void TestOutputFile::refuses_what_is_not_a_regular_file() {
  const std::string target = path("real.txt"), link = path("link.txt"), fifo = path("fifo"), directory = path("dir");
  write_file(target, "precious");
  fs::create_symlink(target, link);
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(directory);
  const struct {
    std::string path, message;
  } cases[] = {
      {link, "--out: cannot replace '" + link + "': it is a symbolic link (to '" + target + "')"},
      {fifo, "--out: cannot replace '" + fifo + "': it is a FIFO (named pipe)"},
      {directory, "--out: cannot replace '" + directory + "': it is a directory"},
      {"/dev/full", "--out: cannot replace '/dev/full': it is a character device"},
      {path("nodir/x.txt"),
       "--out: cannot write '" + path("nodir/x.txt") + "': the directory '" + path("nodir") + "' does not exist"},
      {target + "/x.txt", "--out: cannot write '" + target + "/x.txt': Not a directory"},
  };
  for (const auto& c : cases) {
    const std::string what = output_error([&] { OutputFile out({"--out", c.path}); });
    QVERIFY2(what.rfind(c.message, 0) == 0, (c.path + " -> " + what).c_str());
  }
  // Without a flag the message starts with the path (the GUI's dialogs, RecordingWriter).
  QVERIFY(output_error([&] {
            OutputFile out({"", link});
          }).rfind(link + ": cannot replace: it is a symbolic link", 0) == 0);
  QCOMPARE(read_file(target), std::string("precious"));
  QCOMPARE(names_in(dir_.path().toStdString()), (std::vector<std::string>{"dir", "fifo", "link.txt", "real.txt"}));
}

void TestOutputFile::outputs_never_clobber_inputs_or_each_other() {
  const std::string data = path("data.txt"), hard = path("hard.txt"), soft = path("soft.txt");
  write_file(data, "corpus");
  fs::create_hard_link(data, hard);
  fs::create_symlink(data, soft);
  fs::create_directory(path("sub"));
  const std::string spelled = (dir_.path() + "/sub/../data.txt").toStdString();
  for (const std::string& out : {data, hard, soft, spelled}) {
    const std::string what = output_error([&] { check_outputs({{"--data", data}}, {{"--metrics-out", out}}); });
    QVERIFY2(
        what.rfind("--metrics-out: will not write '" + out + "': it is the same file as --data '" + data + "'", 0) == 0,
        what.c_str());
  }
  const std::string twice = output_error([&] {
    check_outputs({{"--data", data}}, {{"--record", path("f")}, {"--metrics-out", path("sub/../f")}});
  });
  QVERIFY2(twice.find("it is the same file as --record; give each output its own file") != std::string::npos,
           twice.c_str());
  check_outputs({{"--data", data}, {"--unused", ""}}, {{"--record", path("r.ssrun")}, {"--metrics-out", ""}});
  QCOMPARE(read_file(data), std::string("corpus"));
}

void TestOutputFile::stream_errors_surface_at_commit() {
  // A write fails: after the first failure every write fails the same way and commit() reports it.
  const std::string target = path("stream.json");
  write_file(target, "old trace");
  pid_t child = ::fork();
  if (child == 0) {  // a child, so the file-size limit is its own
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      OutputFile out({"--chrome-trace", target});
      for (int i = 0; i < 10000; ++i) out.stream() << "0123456789";
      out.commit();
    } catch (const OutputError& e) {
      const std::string what = e.what();
      const bool named = what.find("--chrome-trace: writing '" + target + "' failed: File too large") == 0 &&
                         what.find("was left as it was") != std::string::npos;
      ::_exit(named ? 0 : 3);
    }
    ::_exit(4);
  }
  int status = 0;
  QCOMPARE(::waitpid(child, &status, 0), child);
  QVERIFY(WIFEXITED(status));
  QCOMPARE(WEXITSTATUS(status), 0);
  QCOMPARE(read_file(target), std::string("old trace"));
  QCOMPARE(names_in(dir_.path().toStdString()), std::vector<std::string>{"stream.json"});
}

void TestOutputFile::write_error_names_the_os_error() {
  const std::string target = path("metrics.jsonl");
  pid_t child = ::fork();
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1000, 1000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    OutputFile out({"--metrics-out", target});
    int code = 5;
    for (int line = 0; line < 100 && code == 5; ++line) {
      try {
        out.write(std::string(99, 'x') + "\n");
      } catch (const OutputError& e) {  // the 11th line crosses 1000 bytes
        code = line == 10 && std::string(e.what()) == "--metrics-out: writing '" + target + "' failed: File too large"
                   ? 0
                   : 6;
      }
    }
    try {
      out.write("again");  // the same error again
      code = 7;
    } catch (const OutputError&) {
    }
    const int result = out.failed() ? code : 8;
    out.abandon();
    ::_exit(result);
  }
  int status = 0;
  QCOMPARE(::waitpid(child, &status, 0), child);
  QVERIFY(WIFEXITED(status));
  QCOMPARE(WEXITSTATUS(status), 0);
  QCOMPARE(names_in(dir_.path().toStdString()), std::vector<std::string>{});  // the child's temporary went with it
}

void TestOutputFile::require_regular_input_refuses_a_fifo() {
  const std::string fifo = path("pipe"), text = path("text.txt");
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  write_file(text, "t");
  require_regular_input({"--data", text});
  require_regular_input({"--data", path("missing.txt")});  // left to the reader's own message
  require_regular_input({"--data", ""});
  try {
    require_regular_input({"--data", fifo});
    QFAIL("no ConfigError");
  } catch (const ConfigError& e) {
    QCOMPARE(std::string(e.what()),
             "--data: cannot read '" + fifo + "': it is a FIFO (named pipe), not a regular file");
  }
  QVERIFY_THROWS_EXCEPTION(ConfigError, require_regular_input({"--data", dir_.path().toStdString()}));
}

void TestOutputFile::recording_writer_commits_on_close_and_abandons_on_request() {
  const std::string file = path("run.ssrun");
  write_file(file, "an older recording");
  {
    RecordingWriter writer(file, "{}");
    QVERIFY(writer.writing_path() != file);
    writer.emit(Event{});
    writer.abandon();  // a run cut short
    QVERIFY(!fs::exists(writer.writing_path()));
  }
  QCOMPARE(read_file(file), std::string("an older recording"));
  RecordingWriter writer(file, "{}", "--record");
  writer.emit(Event{});
  writer.flush();
  QCOMPARE(read_file(file), std::string("an older recording"));
  RecordingReader reader;
  reader.open(writer.writing_path());
  QCOMPARE(reader.read_all().size(), std::size_t{1});
  writer.close();
  RecordingReader done;
  done.open(file);
  QCOMPARE(done.read_all().size(), std::size_t{1});
  QCOMPARE(names_in(dir_.path().toStdString()), std::vector<std::string>{"run.ssrun"});
  const std::string refused = output_error([&] { RecordingWriter w(path("."), "{}", "--record"); });
  QVERIFY2(refused.rfind("--record: cannot replace", 0) == 0, refused.c_str());
}

QTEST_GUILESS_MAIN(TestOutputFile)
#include "test_output_file.moc"
