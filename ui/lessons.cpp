// SPDX-License-Identifier: GPL-3.0-or-later
#include "lessons.h"

#include <QDesktopServices>
#include <QDir>
#include <QEvent>
#include <QFile>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QStringList>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include <map>
#include <utility>

#include "config/lesson_file.h"
#include "config/run_schema.h"
#include "config_panel.h"
#include "core/error.h"
#include "i18n.h"

namespace shardscope::ui {

namespace {

QString read_text(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly))
    throw ConfigError("lesson: cannot read " + path.toStdString());
  return QString::fromUtf8(file.readAll());
}

// The first of lesson.json's "figures.compare" entries over the lesson's run
// (the same keys `train --lesson` compares); none when it has none or they do not validate.
// lesson.json's optional "order": where the lesson stands among its chapter's
// (0 when absent; equal orders keep the folders' alphabetical order).
int chapter_order(const QString& json) {
  const nlohmann::json root = nlohmann::json::parse(json.toStdString(), nullptr, false);
  const auto order = root.is_object() ? root.find("order") : root.end();
  return order != root.end() && order->is_number_integer() ? order->get<int>() : 0;
}

void read_comparison(const QString& json, Lesson& lesson) {
  const nlohmann::json root = nlohmann::json::parse(json.toStdString(), nullptr, false);
  if (root.is_discarded() || !root.contains("figures") || !root["figures"].contains("compare")) return;
  const nlohmann::json& entries = root["figures"]["compare"];
  if (!entries.is_array() || entries.empty() || !entries[0].is_object()) return;
  RunConfig run = lesson.config;
  QStringList change;
  try {
    for (const auto& [key, value] : entries[0].items()) {
      const RunField* field = find_run_field(key);
      if (field == nullptr) return;
      set_field(run, *field, value);
      change << QString::fromStdString(std::string(field->flag) + ' ' +
                                       (value.is_string() ? value.get<std::string>() : value.dump()));
    }
    validate_run_config(run);
  } catch (const std::exception&) {
    return;
  }
  lesson.compare = run;
  lesson.compare_change = change.join(QLatin1Char(' '));
}

}  // namespace

std::vector<Lesson> load_lessons(const QString& root) {
  std::vector<Lesson> lessons;
  std::map<QString, int> orders;
  const QDir dir(root);
  for (const QString& id : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QString folder = dir.filePath(id);
    const std::string where = (folder + QStringLiteral("/lesson.json")).toStdString();
    const QString json = read_text(folder + QStringLiteral("/lesson.json"));
    const LessonFile file = parse_lesson_file(json.toStdString(), where, ConfigPanel::defaultConfig());
    Lesson lesson;
    lesson.id = id;
    lesson.title_en = QString::fromStdString(file.title_en);
    lesson.title_zh = QString::fromStdString(file.title_zh);
    lesson.config = file.config;
    lesson.chapter = file.chapter;
    lesson.playback_speed = file.playback_speed;
    lesson.text_en = read_text(folder + QStringLiteral("/en.md"));
    lesson.text_zh = read_text(folder + QStringLiteral("/zh_CN.md"));
    read_comparison(json, lesson);
    orders.emplace(id, chapter_order(json));
    lessons.push_back(std::move(lesson));
  }
  std::stable_sort(lessons.begin(), lessons.end(), [&](const Lesson& a, const Lesson& b) {  // folders sorted by id
    return std::pair(a.chapter, orders.at(a.id)) < std::pair(b.chapter, orders.at(b.id));
  });
  return lessons;
}

LessonsPanel::LessonsPanel(QWidget* parent)
    : QWidget(parent),
      lessons_(load_lessons()),
      list_(new QListWidget(this)),
      text_(new QTextBrowser(this)),
      try_(new QPushButton(this)),
      compare_(new QPushButton(this)) {
  setObjectName(QStringLiteral("lessons"));
  list_->setObjectName(QStringLiteral("lessonList"));
  text_->setObjectName(QStringLiteral("lessonText"));
  try_->setObjectName(QStringLiteral("tryLesson"));
  compare_->setObjectName(QStringLiteral("tryComparison"));
  text_->setOpenLinks(false);  // the text stays; a link is handled below
  connect(text_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() == QLatin1String("shardscope"))
      Q_EMIT openView(url.path());
    else
      QDesktopServices::openUrl(url);
  });
  list_->setWordWrap(true);  // a long title takes two lines in a narrow panel, never a sideways scroll
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(list_);
  layout->addWidget(text_, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(try_);
  buttons->addWidget(compare_);
  layout->addLayout(buttons);
  for (std::size_t i = 0; i < lessons_.size(); ++i) list_->addItem(QString());
  connect(list_, &QListWidget::currentRowChanged, this, &LessonsPanel::showLesson);
  connect(try_, &QPushButton::clicked, this, [this] {
    const int i = currentLesson();
    if (i < 0) return;
    const Lesson& lesson = lessons_[static_cast<std::size_t>(i)];
    Q_EMIT tryLesson(lesson.config, lesson.playback_speed);
  });
  connect(compare_, &QPushButton::clicked, this, [this] {
    const int i = currentLesson();
    if (i < 0 || !lessons_[static_cast<std::size_t>(i)].compare) return;
    const Lesson& lesson = lessons_[static_cast<std::size_t>(i)];
    Q_EMIT tryComparison(*lesson.compare, lesson.playback_speed);
  });
  retranslate();
  if (!lessons_.empty()) list_->setCurrentRow(0);
}

void LessonsPanel::fitListHeight() {
  const int budget = std::max(height() / 4, 150);
  int rows = 0, h = 0;
  for (int r = 0; r < list_->count(); ++r) {
    const int row = list_->sizeHintForRow(r);
    if (rows >= 3 && h + row > budget) break;
    h += row;
    ++rows;
  }
  list_->setFixedHeight(h + 2 * list_->frameWidth());
}

void LessonsPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitListHeight();  // a narrower panel wraps more titles onto two lines
}

// "4." for a chapter's only lesson; "4.1", "4.2" where a chapter has several (no two alike).
QString LessonsPanel::lessonNumber(std::size_t index) const {
  const int chapter = lessons_[index].chapter;
  int nth = 0, of = 0;
  for (std::size_t i = 0; i < lessons_.size(); ++i) {
    if (lessons_[i].chapter != chapter) continue;
    ++of;
    if (i <= index) ++nth;
  }
  return of > 1 ? QStringLiteral("%1.%2").arg(chapter).arg(nth) : QStringLiteral("%1.").arg(chapter);
}

int LessonsPanel::currentLesson() const { return list_->currentRow(); }

QString LessonsPanel::currentText() const { return text_->toPlainText(); }

void LessonsPanel::showLesson(int index) {
  if (index < 0 || index >= static_cast<int>(lessons_.size())) return;
  if (list_->currentRow() != index) list_->setCurrentRow(index);  // calls back here
  const Lesson& lesson = lessons_[static_cast<std::size_t>(index)];
  const bool zh = currentLanguage() == QLatin1String("zh_CN");
  text_->setMarkdown(zh ? lesson.text_zh : lesson.text_en);
  compare_->setVisible(lesson.compare.has_value());
  compare_->setText(tr("Pin, then try %1").arg(lesson.compare_change));
}

void LessonsPanel::retranslate() {
  const bool zh = currentLanguage() == QLatin1String("zh_CN");
  for (std::size_t i = 0; i < lessons_.size(); ++i)
    list_->item(static_cast<int>(i))
        ->setText(QStringLiteral("%1 %2").arg(lessonNumber(i), zh ? lessons_[i].title_zh : lessons_[i].title_en));
  try_->setText(tr("Try it: load this run"));
  try_->setToolTip(tr("Loads the lesson's settings into the panel; press Run to train."));
  compare_->setToolTip(
      tr("After the lesson's run: pins it (loss curve and memory bars stay) and loads the run it "
         "is compared with; press Run to draw both."));
  showLesson(currentLesson());
  fitListHeight();  // the other language's titles wrap differently
}

void LessonsPanel::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

}  // namespace shardscope::ui
