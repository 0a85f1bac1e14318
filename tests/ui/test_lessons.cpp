// SPDX-License-Identifier: GPL-3.0-or-later
// The lessons (tutorials/): every embedded lesson parses, its run passes the
// engine's validation, it has English and Chinese text; "Try it" loads its run
// into the panel; the language switch swaps the text; a broken lesson file is
// refused naming the file and the key. Offscreen.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>
#include <algorithm>
#include <set>

#include "config/lesson_file.h"
#include "config_panel.h"
#include "core/error.h"
#include "i18n.h"
#include "lessons.h"
#include "main_window.h"
#include "train/metrics_json.h"
#include "views/schedule_compare.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {
bool has_cjk(const QString& text) {
  for (const QChar c : text)
    if (c.unicode() >= 0x4E00 && c.unicode() <= 0x9FFF) return true;
  return false;
}
}  // namespace

class TestLessons : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { setLanguage(QStringLiteral("en")); }

  void everyLessonParsesAndValidates() {
    const auto lessons = load_lessons();
    QCOMPARE(static_cast<int>(lessons.size()), 18);
    int chapter = 0;
    std::set<int> chapters;
    for (const Lesson& l : lessons) {
      chapters.insert(l.chapter);
      QVERIFY2(!l.title_en.isEmpty() && has_cjk(l.title_zh), qPrintable(l.id));
      QVERIFY2(l.text_en.contains(QStringLiteral("Try it")), qPrintable(l.id));
      QVERIFY2(has_cjk(l.text_zh) && l.text_zh.contains(QStringLiteral("试一试")), qPrintable(l.id));
      QVERIFY2(l.chapter >= chapter, qPrintable(l.id));  // listed in the seed's chapter order
      chapter = l.chapter;
      validate_run_config(l.config);  // throws ConfigError naming the flag
    }
    QCOMPARE(static_cast<int>(chapters.size()), kSeedChapters);  // every chapter of the seed has a lesson
    // What each lesson is about is in its run.
    const auto lesson = [&](const char* id) -> const Lesson& {
      const auto it = std::find_if(lessons.begin(), lessons.end(), [&](const Lesson& l) { return l.id == QLatin1String(id); });
      if (it == lessons.end()) qFatal("no lesson %s", id);
      return *it;
    };
    QCOMPARE(lessons.front().id, QStringLiteral("gradient_accumulation"));
    QCOMPARE(lesson("gradient_accumulation").config.accum, 4);
    QVERIFY(lesson("activation_checkpointing").config.checkpoint);
    QCOMPARE(lesson("model_memory").chapter, 3);
    QCOMPARE(lesson("bert_hidden_states").chapter, 9);
    QVERIFY(lesson("bert_hidden_states").text_en.contains(QStringLiteral("Hidden states")));
    QCOMPARE(lesson("one_config_any_setup").config.world_size(), 1);
    QCOMPARE(lesson("ddp_buckets").config.bucket_mb, 1.0);
    QCOMPARE(lesson("ranks_threads_processes").config.world_size(), 4);
    QCOMPARE(lesson("stragglers_and_failures").chapter, 7);
    QCOMPARE(lesson("stragglers_and_failures").config.slow_rank, 3);
    QVERIFY(lesson("stragglers_and_failures").text_en.contains(QStringLiteral("Waits")));
    QVERIFY(lesson("model_memory").text_en.contains(QStringLiteral("Plan memory")));
    QVERIFY(lesson("ddp_vs_dataparallel").config.dp_mode == DataParallelMode::naive);
    QVERIFY(lesson("fp16_loss_scaling").config.precision == Precision::fp16);
    QCOMPARE(lesson("fp16_loss_scaling").config.initial_scale_power, 24);
    QVERIFY(lesson("pipeline_bubbles").config.schedule == PipelineScheduleKind::gpipe);
    QCOMPARE(lesson("pipeline_bubbles").config.layout.pp(), 4);
    QVERIFY(lesson("pipeline_send_recv").config.schedule == PipelineScheduleKind::one_f_one_b);
    QCOMPARE(lesson("pipeline_send_recv").config.layout.pp(), 2);
    QVERIFY(lesson("pipeline_zero_bubble").config.schedule == PipelineScheduleKind::zb_h1);
    QVERIFY(lesson("pipeline_zero_bubble").text_en.contains(QStringLiteral("Compare schedules")));
    QCOMPARE(lesson("zero_stages").config.zero_stage, 3);
    QCOMPARE(lesson("tensor_parallelism").config.layout.tp(), 2);
    QVERIFY(lesson("sequence_parallelism").config.sequence_parallel);
    QCOMPARE(lesson("context_parallelism").config.layout.cp(), 2);
    QCOMPARE(lesson("mixture_of_experts").config.expert_parallel, 2);
    // After ZeRO, in their chapter: tensor, sequence, context parallelism, then experts ("order" in lesson.json).
    const auto at = [&](const char* id) {
      return std::find_if(lessons.begin(), lessons.end(), [&](const Lesson& l) { return l.id == QLatin1String(id); }) -
             lessons.begin();
    };
    // The zero-bubble lesson right after the two pipeline lessons (chapter 4, "order" 1).
    QVERIFY(at("pipeline_bubbles") + 1 == at("pipeline_send_recv") &&
            at("pipeline_send_recv") + 1 == at("pipeline_zero_bubble"));
    QVERIFY(at("zero_stages") + 1 == at("tensor_parallelism") &&
            at("tensor_parallelism") + 1 == at("sequence_parallelism") &&
            at("sequence_parallelism") + 1 == at("context_parallelism") &&
            at("context_parallelism") + 1 == at("mixture_of_experts"));
  }

  void tryItLoadsTheRunIntoThePanel() {
    MainWindow window;
    window.show();
    QVERIFY(window.lessonsDock()->isHidden());  // the window opens on its own preset
    window.lessonsDock()->show();
    LessonsPanel* panel = window.lessons();
    for (int i = 0; i < static_cast<int>(panel->lessons().size()); ++i) {
      panel->showLesson(i);
      QTest::mouseClick(panel->tryButton(), Qt::LeftButton);
      const RunConfig want = panel->lessons()[static_cast<std::size_t>(i)].config;
      QCOMPARE(QString::fromStdString(run_config_to_json(window.configPanel()->config()).dump()),
               QString::fromStdString(run_config_to_json(want).dump()));
      QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
      QVERIFY(window.runButton()->isEnabled());
      // The lesson's pace: the playback control shows the speed lesson.json asks for.
      const auto* speed = window.findChild<QComboBox*>(QStringLiteral("playbackSpeed"));
      QVERIFY(speed != nullptr);
      QCOMPARE(speed->currentData().toDouble(), panel->lessons()[static_cast<std::size_t>(i)].playback_speed);
    }
    // Every lesson paces itself: its runs finish in seconds at 1x, faster than the views can be followed.
    for (const Lesson& l : panel->lessons()) QVERIFY2(l.playback_speed < 1.0, qPrintable(l.id));
  }

  // The zero-bubble lesson's link (shardscope:schedules, in both languages) opens the Schedules tab.
  void lessonLinkOpensTheSchedulesTab() {
    MainWindow window;
    window.show();
    window.lessonsDock()->show();
    LessonsPanel* panel = window.lessons();
    const auto& lessons = panel->lessons();
    const auto it = std::find_if(lessons.begin(), lessons.end(),
                                 [](const Lesson& l) { return l.id == QLatin1String("pipeline_zero_bubble"); });
    QVERIFY(it != lessons.end());
    QVERIFY(it->text_en.contains(QStringLiteral("(shardscope:schedules)")));
    QVERIFY(it->text_zh.contains(QStringLiteral("(shardscope:schedules)")));
    panel->showLesson(static_cast<int>(it - lessons.begin()));
    auto* text = panel->findChild<QTextBrowser*>(QStringLiteral("lessonText"));
    QVERIFY(text != nullptr);
    const QString before = text->toPlainText();
    QVERIFY(window.viewTabs()->currentWidget() != window.scheduleComparison());
    Q_EMIT text->anchorClicked(QUrl(QStringLiteral("shardscope:schedules")));  // as a click on the link does
    QCOMPARE(window.viewTabs()->currentWidget(), static_cast<QWidget*>(window.scheduleComparison()));
    QCOMPARE(text->toPlainText(), before);  // the lesson stays (the browser does not follow the link)
  }

  // The list numbers lessons by chapter; a chapter with several gets 4.1, 4.2: no two alike.
  void noTwoLessonsNumberedAlike() {
    LessonsPanel panel;
    const auto* list = panel.findChild<QListWidget*>(QStringLiteral("lessonList"));
    std::set<QString> numbers;
    for (int i = 0; i < list->count(); ++i) {
      const QString number = list->item(i)->text().section(QLatin1Char(' '), 0, 0);
      QVERIFY2(numbers.insert(number).second, qPrintable(list->item(i)->text()));
    }
    QCOMPARE(static_cast<std::size_t>(list->count()), panel.lessons().size());
  }

  // At 1280×720, in both languages, the list shows whole titles only (no half row at its bottom),
  // at least five of them; a screenshot goes to the build folder (lessons_list{,_zh}.png).
  void listShowsWholeRowsAt1280x720() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    window.lessonsDock()->show();
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(setLanguage(language));
      QTest::qWait(50);
      const auto* list = window.lessons()->findChild<QListWidget*>(QStringLiteral("lessonList"));
      const int bottom = list->viewport()->height();
      int whole = 0;
      for (int i = 0; i < list->count(); ++i) {
        const QRect row = list->visualItemRect(list->item(i));
        if (row.top() >= bottom) break;
        QVERIFY2(row.bottom() < bottom,
                 qPrintable(QStringLiteral("row %1 cut at %2 of %3").arg(i).arg(row.bottom()).arg(bottom)));
        ++whole;
      }
      QVERIFY2(whole >= 5, qPrintable(QString::number(whole)));
      window.grab().save(QDir(QCoreApplication::applicationDirPath())
                             .filePath(language == QLatin1String("en") ? QStringLiteral("lessons_list.png")
                                                                       : QStringLiteral("lessons_list_zh.png")));
    }
    QVERIFY(setLanguage(QStringLiteral("en")));
  }

  void languageSwitchSwapsTheText() {
    LessonsPanel panel;
    panel.showLesson(0);
    QVERIFY(!has_cjk(panel.currentText()));
    QVERIFY(setLanguage(QStringLiteral("zh_CN")));
    QCoreApplication::processEvents();
    QVERIFY2(has_cjk(panel.currentText()), qPrintable(panel.currentText().left(80)));
    QVERIFY(has_cjk(panel.findChild<QListWidget*>(QStringLiteral("lessonList"))->item(0)->text()));
    QVERIFY(setLanguage(QStringLiteral("en")));
    QCoreApplication::processEvents();
    QVERIFY(!has_cjk(panel.currentText()));
  }

  // CommonMark closes emphasis only where the delimiter is "flanking": a `*`
  // after a full-width colon and before a Han character (`*节奏：*试`) is
  // neither, and was drawn as a literal asterisk. Every lesson, in both
  // languages, rendered by the panel itself: no `*` outside code.
  void lessonsRenderWithoutLiteralAsterisks() {
    LessonsPanel panel;
    const auto* browser = panel.findChild<QTextBrowser*>(QStringLiteral("lessonText"));
    QVERIFY(browser != nullptr);
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(setLanguage(language));
      QCoreApplication::processEvents();
      for (int i = 0; i < static_cast<int>(panel.lessons().size()); ++i) {
        panel.showLesson(i);
        const QString where = panel.lessons()[static_cast<std::size_t>(i)].id + QLatin1Char(' ') + language;
        QVERIFY2(language == QLatin1String("en") || has_cjk(panel.currentText()), qPrintable(where));
        int emphasized = 0;
        for (QTextBlock block = browser->document()->begin(); block.isValid(); block = block.next()) {
          for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            const QTextCharFormat format = fragment.charFormat();
            if (format.fontFixedPitch()) continue;  // code: `model(**inputs)` is literal
            if (format.fontItalic() || format.fontWeight() > QFont::Normal) ++emphasized;
            QVERIFY2(!fragment.text().contains(QLatin1Char('*')),
                     qPrintable(where + QStringLiteral(": a literal * in \"") + fragment.text().left(120) + '"'));
          }
        }
        QVERIFY2(emphasized > 0, qPrintable(where + QStringLiteral(": no emphasis rendered at all")));
      }
    }
    QVERIFY(setLanguage(QStringLiteral("en")));
  }

  void brokenLessonNamesTheFileAndKey() {
    QTemporaryDir dir;
    QDir(dir.path()).mkdir(QStringLiteral("bad"));
    const QString folder = dir.path() + QStringLiteral("/bad");
    const auto write = [&](const char* name, const QByteArray& text) {
      QFile f(folder + QLatin1Char('/') + QLatin1String(name));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
    };
    write("en.md", "# x");
    write("zh_CN.md", "# x");
    write("lesson.json", R"({"title": {"en": "x", "zh_CN": "x"}, "chapter": 1, "config": {"dp": 2, "zero_stage": 1}})");
    try {
      load_lessons(dir.path());
      QFAIL("a lesson with an unknown key was loaded");
    } catch (const ConfigError& e) {
      const QString m = QString::fromUtf8(e.what());
      QVERIFY2(m.contains(QStringLiteral("bad/lesson.json")) && m.contains(QStringLiteral("\"zero_stage\"")),
               qPrintable(m));
    }
    write("lesson.json", R"({"title": {"en": "x", "zh_CN": "x"}, "chapter": 1, "config": {"dp": 3, "batch": 16}})");
    try {
      load_lessons(dir.path());
      QFAIL("a lesson whose run the engine refuses was loaded");
    } catch (const ConfigError& e) {
      // Named as the file names it: the key, not the CLI's flag.
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("\"batch\" 16 does not split")), e.what());
      QVERIFY2(!QString::fromUtf8(e.what()).contains(QStringLiteral("--")), e.what());
    }
    write("lesson.json", "[]");  // found by fuzz_lesson: JSON that is not an object threw type_error
    try {
      load_lessons(dir.path());
      QFAIL("a lesson.json that is not an object was loaded");
    } catch (const ConfigError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("bad/lesson.json")), e.what());
    }
    write("lesson.json", R"({"title": {"en": "x", "zh_CN": "x"}, "chapter": 1, "playback_speed": 0.3, "config": {}})");
    try {
      load_lessons(dir.path());
      QFAIL("a lesson with a speed the window does not offer was loaded");
    } catch (const ConfigError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("\"playback_speed\" must be 1, 0.5, 0.25 or 0.1")),
               e.what());
    }
    // Nested past the JSON depth limit: refused with its place (a stack overflow before).
    write("lesson.json", QByteArray(R"({"title": {"en": "x", "zh_CN": "x"}, "chapter": 1, "config": {"steps": )") +
                             QByteArray(100000, '[') + QByteArray(100000, ']') + "}}");
    try {
      load_lessons(dir.path());
      QFAIL("a lesson nested 100,000 deep was loaded");
    } catch (const ConfigError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("bad/lesson.json: line 1")), e.what());
    }
  }
};

QTEST_MAIN(TestLessons)
#include "test_lessons.moc"
