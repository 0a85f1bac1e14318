// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons (tutorials/<id>/): the text in English and Chinese beside the views,
// and a "Try it" button that loads the lesson's run into the config panel. The
// lesson files are embedded under :/tutorials at build time.
//   lesson.json: {"title": {"en": ..., "zh_CN": ...},
//                 "config": {keys of the run that differ from the panel's default}}
//   en.md, zh_CN.md: the text (Markdown).
// Config keys: model, steps, batch, seq, dp, pp, micro_batches, dp_mode (ddp|naive),
// zero, schedule (gpipe|1f1b), precision (fp32|fp16|bf16), initial_scale_power,
// checkpoint (bool), eval_every.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "config/run_config.h"

class QListWidget;
class QPushButton;
class QTextBrowser;

namespace shardscope::ui {

struct Lesson {
  QString id;  // the folder name
  QString title_en, title_zh;
  QString text_en, text_zh;  // Markdown
  RunConfig config;          // the panel's default with the lesson's keys applied
  int chapter = 0;               // the seed chapter it teaches (1 to 11)
  double playback_speed = 1.0;  // the pace the lesson asks for (lesson.json "playback_speed")
  // The run it compares against (lesson.json "figures.compare", the first
  // entry's keys over `config`); `compare_change` names them ("--accum 1").
  std::optional<RunConfig> compare;
  QString compare_change;
};

// Every lesson under `root` (":/tutorials" for the embedded ones), in chapter order (then by id).
// Throws ConfigError naming the file and key for a lesson that does not parse.
std::vector<Lesson> load_lessons(const QString& root = QStringLiteral(":/tutorials"));

class LessonsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit LessonsPanel(QWidget* parent = nullptr);

  const std::vector<Lesson>& lessons() const { return lessons_; }
  void showLesson(int index);
  int currentLesson() const;
  QString currentText() const;  // the shown text, as plain text
  QPushButton* tryButton() const { return try_; }
  // "Pin, then try --accum 1": shown for a lesson that compares two runs.
  QPushButton* compareButton() const { return compare_; }

 Q_SIGNALS:
  // The user pressed Try it: load this run into the panel and set the playback speed.
  void tryLesson(const shardscope::RunConfig& config, double playback_speed);
  // The second run of a comparing lesson: pin the run on screen, then load this one.
  void tryComparison(const shardscope::RunConfig& config, double playback_speed);
  // A link `shardscope:VIEW` in a lesson's text: show that view ("schedules": the Schedules tab).
  // Other links open in the system's browser.
  void openView(const QString& view);

 protected:
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void retranslate();
  // The list's height: as many whole titles as fit in about a quarter of the panel (at least
  // three), never half a row at the bottom; the rest scroll.
  void fitListHeight();
  QString lessonNumber(std::size_t index) const;

  std::vector<Lesson> lessons_;
  QListWidget* list_;
  QTextBrowser* text_;
  QPushButton* try_;
  QPushButton* compare_;
};

}  // namespace shardscope::ui
