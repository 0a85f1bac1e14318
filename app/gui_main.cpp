// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope: the desktop app. Opens on a ready preset (gpt-tiny, dp 2 x pp 2).
#include <QApplication>

#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
  shardscope::ui::MainWindow window;
  window.show();
  return QApplication::exec();
}
