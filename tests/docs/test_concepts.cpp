// SPDX-License-Identifier: GPL-3.0-or-later
// A newcomer greps a lesson's word and lands in the code: docs/CONCEPTS.md maps
// every concept to `path/to/file.cpp:function`, and every lesson ends with a
// "Code:" paragraph (Chinese: "代码：") naming the same places. This test reads the
// sources (it links nothing of the engine) and checks that each named file
// exists and *defines* that function, so a rename that forgets the map fails
// here with the row to update.
//
// A definition is the name followed by its parameter list and then a body `{`
// (or a constructor's `:` initializer list), after qualifiers such as `const`;
// a call or a declaration is followed by something else (`;`, `)`, `= 0`).
//   `file:A::b`  "A::b(" in the file, or b defined inline in the body of class A;
//   `file:name`  a free function "name(" that is not a member access or a call.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTest>
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace {

// `path/to/file.ext:Name` or `path:A::b`, inside backticks.
const QRegularExpression kLocation(QStringLiteral(R"(`([\w./-]+\.(?:cpp|h|cu|cuh)):((?:\w+::)*~?\w+)`)"));

QString source_dir() {
  return QStringLiteral(SHARDSCOPE_SOURCE_DIR);
}

std::optional<QString> read_text(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return std::nullopt;
  return QString::fromUtf8(file.readAll());
}

// The text with its comments blanked out (newlines kept), so prose such as
// "// send (count): ..." never reads as code. String and character literals
// are stepped over (a ' after a digit is a digit separator, as in 1'000).
QString without_comments(const QString& text) {
  QString out = text;
  const auto at = [&](qsizetype i, const char* two) { return out.mid(i, 2) == QLatin1String(two); };
  for (qsizetype i = 0; i < out.size(); ++i) {
    const QChar c = out[i];
    const bool literal =
        c == QLatin1Char('"') || (c == QLatin1Char('\'') && (i == 0 || !out[i - 1].isLetterOrNumber()));
    if (literal) {
      for (++i; i < out.size() && out[i] != c && out[i] != QLatin1Char('\n'); ++i)
        if (out[i] == QLatin1Char('\\')) ++i;
    } else if (at(i, "//")) {
      for (; i < out.size() && out[i] != QLatin1Char('\n'); ++i) out[i] = QLatin1Char(' ');
    } else if (at(i, "/*")) {
      for (; i < out.size() && !at(i, "*/"); ++i)
        if (out[i] != QLatin1Char('\n')) out[i] = QLatin1Char(' ');
      for (int k = 0; k < 2 && i < out.size(); ++k, ++i) out[i] = QLatin1Char(' ');
      --i;
    }
  }
  return out;
}

// The index just past the ')' that closes the '(' at `open`, or -1.
qsizetype past_parameters(const QString& text, qsizetype open) {
  int depth = 0;
  for (qsizetype i = open; i < text.size(); ++i) {
    if (text[i] == QLatin1Char('(')) ++depth;
    if (text[i] == QLatin1Char(')') && --depth == 0) return i + 1;
  }
  return -1;
}

// Whether the parameter list opening at `open` is followed by a body: '{', or
// ':' (not "::") for a constructor, after const / noexcept / override / final
// and reference qualifiers.
bool body_follows(const QString& text, qsizetype open) {
  qsizetype i = past_parameters(text, open);
  if (i < 0) return false;
  static const QStringList qualifiers = {
      QStringLiteral("const"),   QStringLiteral("noexcept"), QStringLiteral("override"), QStringLiteral("final"),
      QStringLiteral("mutable"), QStringLiteral("&&"),       QStringLiteral("&")};
  for (bool skipped = true; skipped && i < text.size();) {
    skipped = false;
    while (i < text.size() && text[i].isSpace()) ++i;
    for (const QString& q : qualifiers) {
      const bool word = q[0].isLetter();
      if (text.mid(i, q.size()) == q &&
          (!word || i + q.size() >= text.size() ||
           !(text[i + q.size()].isLetterOrNumber() || text[i + q.size()] == QLatin1Char('_')))) {
        i += q.size();
        skipped = true;
        break;
      }
    }
  }
  if (i >= text.size()) return false;
  if (text[i] == QLatin1Char('{')) return true;
  return text[i] == QLatin1Char(':') && (i + 1 >= text.size() || text[i + 1] != QLatin1Char(':'));
}

// Whether `name` (plain or qualified, e.g. "A::b") is defined in text[from, to):
// it is not reached through '.', '->' or another qualifier, nothing before it
// on its line makes it part of an expression ('=', '(', ';', "return"), and a
// body follows its parameter list.
bool defines_in(const QString& text, const QString& name, qsizetype from, qsizetype to) {
  const QRegularExpression pattern(QStringLiteral(R"((?<![\w.>:]))") + QRegularExpression::escape(name) +
                                   QStringLiteral(R"(\s*\()"));
  static const QRegularExpression expression_start(QStringLiteral(R"([=(;]|^\s*return\b)"));
  auto it = pattern.globalMatch(text, from);
  while (it.hasNext()) {
    const QRegularExpressionMatch m = it.next();
    if (m.capturedStart() >= to) break;
    const qsizetype line_start = text.lastIndexOf(QLatin1Char('\n'), m.capturedStart()) + 1;
    if (text.mid(line_start, m.capturedStart() - line_start).contains(expression_start)) continue;
    if (body_follows(text, m.capturedEnd() - 1)) return true;
  }
  return false;
}

// The body of `class Name {...}` or `struct Name ... {...}` in text, as [begin, end).
std::optional<std::pair<qsizetype, qsizetype>> class_body(const QString& text, const QString& name) {
  const QRegularExpression pattern(QStringLiteral(R"(\b(?:class|struct)\s+)") + QRegularExpression::escape(name) +
                                   QStringLiteral(R"(\b[^;{]*\{)"));
  const QRegularExpressionMatch m = pattern.match(text);
  if (!m.hasMatch()) return std::nullopt;
  int depth = 0;
  for (qsizetype i = m.capturedEnd() - 1; i < text.size(); ++i) {
    if (text[i] == QLatin1Char('{')) ++depth;
    if (text[i] == QLatin1Char('}') && --depth == 0) return std::make_pair(m.capturedEnd(), i);
  }
  return std::nullopt;
}

// Whether `function` ("name", "A::b", "A::B::c") is defined in the source text.
bool defines(const QString& source, const QString& function) {
  const QString text = without_comments(source);
  if (defines_in(text, function, 0, text.size())) return true;
  const QStringList parts = function.split(QStringLiteral("::"));
  if (parts.size() < 2) return false;
  const auto body = class_body(text, parts[parts.size() - 2]);  // a method defined inline in its class
  return body && defines_in(text, parts.back(), body->first, body->second);
}

struct Location {
  QString file, function;
  QString text() const { return file + QLatin1Char(':') + function; }
};

std::vector<Location> locations_in(const QString& line) {
  std::vector<Location> found;
  auto it = kLocation.globalMatch(line);
  while (it.hasNext()) {
    const QRegularExpressionMatch m = it.next();
    found.push_back({m.captured(1), m.captured(2)});
  }
  return found;
}

// Empty when the location exists, else why not.
QString problem_with(const Location& l) {
  const std::optional<QString> text = read_text(source_dir() + QLatin1Char('/') + l.file);
  if (!text) return QStringLiteral("`%1`: no file %2 in the repository").arg(l.text(), l.file);
  if (!defines(*text, l.function))
    return QStringLiteral("`%1`: %2 defines no %3 (renamed or removed? update the row)")
        .arg(l.text(), l.file, l.function);
  return {};
}

// The rows of every table in CONCEPTS.md (header and separator rows left out).
QStringList table_rows(const QString& markdown) {
  QStringList rows;
  bool in_table = false;
  for (const QString& line : markdown.split(QLatin1Char('\n'))) {
    const bool row = line.startsWith(QLatin1Char('|'));
    if (row && in_table && !line.startsWith(QLatin1String("|---")) && !line.startsWith(QLatin1String("| ---")))
      rows << line;
    in_table = row;  // a table's first row is its header
  }
  return rows;
}

QString concepts_text() {
  const std::optional<QString> text = read_text(source_dir() + QStringLiteral("/docs/CONCEPTS.md"));
  return text.value_or(QString());
}

}  // namespace

class TestConcepts : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The checker itself: definitions are found, calls and declarations are not.
  void checkerTellsDefinitionsFromCallsAndDeclarations() {
    const QString cpp = QStringLiteral(
        "void Reducer::ready(int frontier) {\n"
        "  total = Reducer::count(frontier);\n"
        "  Reducer::flush(frontier);\n"
        "}\n"
        "Reducer::Reducer(Comm& comm,\n"
        "                 int n)\n"
        "    : comm_(comm) {}\n"
        "std::vector<int> make_buckets(const Layout& layout,\n"
        "                              int bytes) {\n"
        "  return split_buckets(layout);\n"
        "}\n"
        "int declared_only(int x);\n"
        "static int helper(int x) { return x; }\n"
        "// prose that names Reducer::later() in a comment\n"
        "// send (count): the prose of a header, not a constructor\n"
        "/* Reducer::boxed(int x) { */\n"
        "const char* url = \"http://x\"; char q = '\"'; int n = 1'000;\n"
        "int after_literals(int x) { return x; }\n");
    QVERIFY(defines(cpp, QStringLiteral("Reducer::ready")));
    QVERIFY(defines(cpp, QStringLiteral("Reducer::Reducer")));  // constructor with an initializer list
    QVERIFY(defines(cpp, QStringLiteral("make_buckets")));      // signature over two lines
    QVERIFY(defines(cpp, QStringLiteral("helper")));
    QVERIFY(!defines(cpp, QStringLiteral("Reducer::count")));  // a call after '='
    QVERIFY(!defines(cpp, QStringLiteral("Reducer::flush")));  // a call statement
    QVERIFY(!defines(cpp, QStringLiteral("split_buckets")));   // a call after return
    QVERIFY(!defines(cpp, QStringLiteral("declared_only")));   // a declaration
    QVERIFY(!defines(cpp, QStringLiteral("Reducer::later")));  // only named in a comment
    QVERIFY(!defines(cpp, QStringLiteral("Reducer::read")));   // a prefix of a real name
    QVERIFY(!defines(cpp, QStringLiteral("send")));            // "(...):" in a line comment
    QVERIFY(!defines(cpp, QStringLiteral("Reducer::boxed")));  // in a block comment
    QVERIFY(defines(cpp, QStringLiteral("after_literals")));   // quotes and separators skipped

    const QString header = QStringLiteral(
        "struct Schedule {\n"
        "  float at(long step) const {  // counts from 0\n"
        "    return lr;\n"
        "  }\n"
        "  void declared(int x);\n"
        "  virtual void pure(int x) = 0;\n"
        "};\n"
        "class Other {\n"
        "  int size() const { return n_; }\n"
        "};\n");
    QVERIFY(defines(header, QStringLiteral("Schedule::at")));  // inline in its class
    QVERIFY(!defines(header, QStringLiteral("Schedule::declared")));
    QVERIFY(!defines(header, QStringLiteral("Schedule::pure")));
    QVERIFY(!defines(header, QStringLiteral("Schedule::size")));  // defined, but in another class
    QVERIFY(defines(header, QStringLiteral("Other::size")));
  }

  // Every `file:function` of docs/CONCEPTS.md exists; every row has a place in
  // the code or says it is not implemented yet; at least 15 rows have one.
  void everyConceptLocationExists() {
    const QString markdown = concepts_text();
    QVERIFY2(!markdown.isEmpty(), "docs/CONCEPTS.md is missing or empty");
    int located = 0, checked = 0;
    for (const QString& row : table_rows(markdown)) {
      const std::vector<Location> locations = locations_in(row);
      if (locations.empty()) {
        QVERIFY2(row.contains(QLatin1String("not implemented yet")),
                 qPrintable(QStringLiteral("docs/CONCEPTS.md: a row with neither a `file:function` nor "
                                           "\"not implemented yet\": ") +
                            row.left(120)));
        continue;
      }
      ++located;
      for (const Location& l : locations) {
        const QString problem = problem_with(l);
        QVERIFY2(problem.isEmpty(), qPrintable(QStringLiteral("docs/CONCEPTS.md: ") + problem));
        ++checked;
      }
    }
    QVERIFY2(located >= 15,
             qPrintable(QStringLiteral("only %1 rows of docs/CONCEPTS.md name a place in the code").arg(located)));
    qInfo("%d rows with a place in the code, %d locations checked", located, checked);
  }

  // The concepts the lessons and the seed teach each have their own row.
  void everyLessonConceptHasARow() {
    const QStringList rows = table_rows(concepts_text());
    const QStringList concepts = {QStringLiteral("Gradient accumulation"),
                                  QStringLiteral("Activation checkpointing"),
                                  QStringLiteral("Memory estimate: model states"),
                                  QStringLiteral("Memory estimate: activations"),
                                  QStringLiteral("GPipe schedule"),
                                  QStringLiteral("1F1B schedule"),
                                  QStringLiteral("Pipeline bubble fraction"),
                                  QStringLiteral("Pipeline send/recv"),
                                  QStringLiteral("Naive DataParallel"),
                                  QStringLiteral("DDP gradient buckets"),
                                  QStringLiteral("Ring all-reduce"),
                                  QStringLiteral("ZeRO-1"),
                                  QStringLiteral("ZeRO-2"),
                                  QStringLiteral("ZeRO-3"),
                                  QStringLiteral("fp16 dynamic loss scaling"),
                                  QStringLiteral("bf16"),
                                  QStringLiteral("Master weights"),
                                  QStringLiteral("AdamW"),
                                  QStringLiteral("Memory ledger categories"),
                                  QStringLiteral("Data-parallel × pipeline grid"),
                                  QStringLiteral("BERT masked LM"),
                                  QStringLiteral("Hidden states"),
                                  QStringLiteral("GPT causal LM"),
                                  QStringLiteral("DeepSpeed JSON"),
                                  QStringLiteral("accelerate YAML"),
                                  QStringLiteral("Hugging Face config.json"),
                                  QStringLiteral("Perfetto / Chrome trace export"),
                                  QStringLiteral("torch.multiprocessing"),
                                  QStringLiteral("accelerate launch")};
    for (const QString& concept_name : concepts) {
      const QString first_cell = QStringLiteral("| ") + concept_name;
      const bool found =
          std::any_of(rows.begin(), rows.end(), [&](const QString& r) { return r.startsWith(first_cell); });
      QVERIFY2(found, qPrintable(QStringLiteral("docs/CONCEPTS.md has no row starting \"") + first_cell + "\""));
    }
  }

  // Every lesson text ends with a "Code:" / "代码：" paragraph naming places
  // that exist and that CONCEPTS.md names too, and pointing to docs/CONCEPTS.md.
  void everyLessonEndsWithItsCode() {
    const std::vector<Location> mapped = locations_in(concepts_text());
    const QDir tutorials(source_dir() + QStringLiteral("/tutorials"));
    const QStringList lessons = tutorials.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
    QVERIFY2(!lessons.isEmpty(), "no lessons under tutorials/");
    for (const QString& lesson : lessons) {
      for (const auto& [file, prefix] : {std::pair{QStringLiteral("en.md"), QStringLiteral("Code:")},
                                         std::pair{QStringLiteral("zh_CN.md"), QStringLiteral("代码：")}}) {
        const QString where = QStringLiteral("tutorials/") + lesson + QLatin1Char('/') + file;
        const std::optional<QString> text = read_text(tutorials.filePath(lesson + QLatin1Char('/') + file));
        QVERIFY2(text, qPrintable(where + QStringLiteral(": cannot read")));
        // The last paragraph, its wrapped lines joined (locations are never split).
        const QString last =
            text->trimmed().split(QStringLiteral("\n\n")).last().replace(QLatin1Char('\n'), QLatin1Char(' '));
        QVERIFY2(last.startsWith(prefix),
                 qPrintable(where + QStringLiteral(": the last paragraph should start with \"") + prefix +
                            "\": " + last.left(80)));
        QVERIFY2(last.contains(QLatin1String("`docs/CONCEPTS.md`")),
                 qPrintable(where + QStringLiteral(": the code line should point to `docs/CONCEPTS.md`")));
        const std::vector<Location> locations = locations_in(last);
        QVERIFY2(!locations.empty(), qPrintable(where + QStringLiteral(": the code line names no `file:function`")));
        for (const Location& l : locations) {
          const QString problem = problem_with(l);
          QVERIFY2(problem.isEmpty(), qPrintable(where + QStringLiteral(": ") + problem));
          const bool in_map = std::any_of(mapped.begin(), mapped.end(), [&](const Location& m) {
            return m.file == l.file && m.function == l.function;
          });
          QVERIFY2(in_map, qPrintable(where + QStringLiteral(": `") + l.text() +
                                      QStringLiteral("` is not in docs/CONCEPTS.md (add it to the concept's row)")));
        }
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestConcepts)
#include "test_concepts.moc"
