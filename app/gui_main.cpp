// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope: the desktop app. Opens on a ready preset (gpt-tiny, dp 2 x pp 2).
// Language: --lang en|zh_CN, else $SHARDSCOPE_LANG, else the system locale
// (zh* gives Chinese); the window's "Language / 语言" switch changes it live.
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>

#include "i18n.h"
#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
  QCommandLineParser parser;
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption lang(QStringList{QStringLiteral("lang")},
                                QStringLiteral("Interface language: en or zh_CN (default: $SHARDSCOPE_LANG, "
                                               "else the system locale)."),
                                QStringLiteral("code"));
  parser.addOption(lang);
  parser.process(app);
  if (parser.isSet(lang) && !shardscope::ui::offersLanguage(parser.value(lang))) {
    std::fprintf(stderr, "shardscope: --lang %s: no such interface language (it has en and zh_CN)\n",
                 qPrintable(parser.value(lang)));
    return 2;
  }
  shardscope::ui::setLanguage(parser.isSet(lang) ? parser.value(lang) : shardscope::ui::defaultLanguage());
  shardscope::ui::MainWindow window;
  window.show();
  return QApplication::exec();
}
