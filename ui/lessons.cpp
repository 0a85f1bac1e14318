// SPDX-License-Identifier: GPL-3.0-or-later
#include "lessons.h"

#include <QDir>
#include <QEvent>
#include <QFile>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>
#include <nlohmann/json.hpp>

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

// The panel's default run with the lesson's keys applied: every key is a field
// of the run-config schema (config/run_schema.h), named in errors as in the file.
RunConfig lesson_config(const nlohmann::json& keys, const std::string& where) {
  RunConfig c = ConfigPanel::defaultConfig();
  if (!keys.is_object()) throw ConfigError(where + ": \"config\" must be an object");
  const auto key_name = [](std::string_view key) { return "\"" + std::string(key) + "\""; };
  try {
    for (const auto& [key, value] : keys.items()) {
      const RunField* field = find_run_field(key);
      if (field == nullptr || field->saved == Saved::never)
        throw ConfigError(where + ": unknown config key \"" + key + "\"");
      set_field(c, *field, value);
    }
    validate_run_config(c);
  } catch (const FieldError& e) {
    throw ConfigError(where + ": " + e.text(key_name));
  }
  return c;
}

}  // namespace

std::vector<Lesson> load_lessons(const QString& root) {
  std::vector<Lesson> lessons;
  const QDir dir(root);
  for (const QString& id : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
    const QString folder = dir.filePath(id);
    const std::string where = (folder + QStringLiteral("/lesson.json")).toStdString();
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text(folder + QStringLiteral("/lesson.json")).toStdString());
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(where + ": " + e.what());
    }
    if (!j.is_object()) throw ConfigError(where + ": expected a JSON object");  // j.value() would throw type_error
    Lesson lesson;
    lesson.id = id;
    const auto title = j.value("title", nlohmann::json::object());
    if (!title.contains("en") || !title.contains("zh_CN") || !title["en"].is_string() || !title["zh_CN"].is_string())
      throw ConfigError(where + ": \"title\" needs \"en\" and \"zh_CN\" strings");
    lesson.title_en = QString::fromStdString(title["en"].get<std::string>());
    lesson.title_zh = QString::fromStdString(title["zh_CN"].get<std::string>());
    lesson.config = lesson_config(j.value("config", nlohmann::json::object()), where);
    lesson.text_en = read_text(folder + QStringLiteral("/en.md"));
    lesson.text_zh = read_text(folder + QStringLiteral("/zh_CN.md"));
    lessons.push_back(std::move(lesson));
  }
  return lessons;
}

LessonsPanel::LessonsPanel(QWidget* parent)
    : QWidget(parent), lessons_(load_lessons()), list_(new QListWidget(this)), text_(new QTextBrowser(this)),
      try_(new QPushButton(this)) {
  setObjectName(QStringLiteral("lessons"));
  list_->setObjectName(QStringLiteral("lessonList"));
  text_->setObjectName(QStringLiteral("lessonText"));
  try_->setObjectName(QStringLiteral("tryLesson"));
  text_->setOpenExternalLinks(true);
  list_->setMaximumHeight(110);
  list_->setWordWrap(true);  // a long title takes two lines in a narrow panel, never a sideways scroll
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(list_);
  layout->addWidget(text_, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(try_);
  layout->addLayout(buttons);
  for (std::size_t i = 0; i < lessons_.size(); ++i) list_->addItem(QString());
  connect(list_, &QListWidget::currentRowChanged, this, &LessonsPanel::showLesson);
  connect(try_, &QPushButton::clicked, this, [this] {
    const int i = currentLesson();
    if (i >= 0) Q_EMIT tryLesson(lessons_[static_cast<std::size_t>(i)].config);
  });
  retranslate();
  if (!lessons_.empty()) list_->setCurrentRow(0);
}

int LessonsPanel::currentLesson() const { return list_->currentRow(); }

QString LessonsPanel::currentText() const { return text_->toPlainText(); }

void LessonsPanel::showLesson(int index) {
  if (index < 0 || index >= static_cast<int>(lessons_.size())) return;
  if (list_->currentRow() != index) list_->setCurrentRow(index);  // calls back here
  const Lesson& lesson = lessons_[static_cast<std::size_t>(index)];
  const bool zh = currentLanguage() == QLatin1String("zh_CN");
  text_->setMarkdown(zh ? lesson.text_zh : lesson.text_en);
}

void LessonsPanel::retranslate() {
  const bool zh = currentLanguage() == QLatin1String("zh_CN");
  for (std::size_t i = 0; i < lessons_.size(); ++i)
    list_->item(static_cast<int>(i))->setText(zh ? lessons_[i].title_zh : lessons_[i].title_en);
  try_->setText(tr("Try it: load this run"));
  try_->setToolTip(tr("Loads the lesson's settings into the panel; press Run to train."));
  showLesson(currentLesson());
}

void LessonsPanel::changeEvent(QEvent* event) {
  if (event->type() == QEvent::LanguageChange) retranslate();
  QWidget::changeEvent(event);
}

}  // namespace shardscope::ui
