// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope: the desktop app. Opens on a ready preset (gpt-tiny, dp 2 x pp 2).
// Language: --lang en|zh_CN, else $SHARDSCOPE_LANG, else the system locale
// (zh* gives Chinese); the window's "Language / 语言" switch changes it live.
// Exit codes as shardscope-cli's: 0 success, 2 bad input (an unknown option,
// an option without its value, a language it does not have).
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>

#include "i18n.h"
#include "main_window.h"

namespace {

// QCommandLineParser::process() exits 1 on an unknown option or a missing
// value; the command line is the user's input, so it is exit 2 here, as in the CLI.
int parse_command_line(QCommandLineParser& parser, const QCommandLineOption& lang) {
  if (!parser.parse(QApplication::arguments())) {
    std::fprintf(stderr, "shardscope: %s\nTry 'shardscope --help'.\n", qPrintable(parser.errorText()));
    return 2;
  }
  if (parser.isSet(QStringLiteral("help")) || parser.optionNames().contains(QStringLiteral("help-all")))
    parser.showHelp(0);  // showHelp and showVersion exit at once
  if (parser.isSet(QStringLiteral("version"))) parser.showVersion();
  if (parser.isSet(lang) && !shardscope::ui::offersLanguage(parser.value(lang))) {
    std::fprintf(stderr, "shardscope: --lang %s: no such interface language (it has en and zh_CN)\n",
                 qPrintable(parser.value(lang)));
    return 2;
  }
  if (!parser.positionalArguments().isEmpty()) {
    std::fprintf(stderr, "shardscope: '%s': the app takes no file or command (shardscope-cli runs commands)\n",
                 qPrintable(parser.positionalArguments().front()));
    return 2;
  }
  return 0;
}

}  // namespace

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
  if (const int refused = parse_command_line(parser, lang); refused != 0) return refused;
  shardscope::ui::setLanguage(parser.isSet(lang) ? parser.value(lang) : shardscope::ui::defaultLanguage());
  shardscope::ui::MainWindow window;
  window.show();
  return QApplication::exec();
}
