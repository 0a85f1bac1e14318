// SPDX-License-Identifier: GPL-3.0-or-later
#include "i18n.h"

#include <QCoreApplication>
#include <QLocale>
#include <QTranslator>

namespace shardscope::ui {

namespace {

QTranslator*& installed() {
  static QTranslator* translator = nullptr;
  return translator;
}

QString& current() {
  static QString code = QStringLiteral("en");
  return code;
}

}  // namespace

QString normalizeLanguage(const QString& code) {
  return code.trimmed().toLower().startsWith(QLatin1String("zh")) ? QStringLiteral("zh_CN") : QStringLiteral("en");
}

bool offersLanguage(const QString& code) {
  const QString c = code.trimmed().toLower();
  return c.startsWith(QLatin1String("en")) || c.startsWith(QLatin1String("zh"));
}

QString defaultLanguage() {
  const QString env = qEnvironmentVariable("SHARDSCOPE_LANG");
  if (!env.isEmpty()) return normalizeLanguage(env);
  return normalizeLanguage(QLocale::system().name());
}

bool setLanguage(const QString& code) {
  const QString lang = normalizeLanguage(code);
  auto* translator = new QTranslator(QCoreApplication::instance());
  // English is the source text: its .qm may hold nothing, and no translator is fine.
  const bool loaded = translator->load(QStringLiteral(":/i18n/shardscope_%1.qm").arg(lang));
  if (!loaded) {
    delete translator;
    translator = nullptr;
    if (lang != QLatin1String("en")) return false;
  }
  if (installed() != nullptr) {
    QCoreApplication::removeTranslator(installed());  // sends LanguageChange
    delete installed();
  }
  installed() = translator;
  current() = lang;
  if (translator != nullptr) QCoreApplication::installTranslator(translator);  // sends LanguageChange
  return true;
}

QString currentLanguage() { return current(); }

QStringList availableLanguages() { return {QStringLiteral("en"), QStringLiteral("zh_CN")}; }

QString languageName(const QString& code) {
  return normalizeLanguage(code) == QLatin1String("zh_CN") ? QStringLiteral("中文") : QStringLiteral("English");
}

}  // namespace shardscope::ui
