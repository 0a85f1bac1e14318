// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI's languages: English (the source strings) and Simplified Chinese.
// The compiled translations (.qm, from resources/translations/*.ts) are
// embedded in the binary under :/i18n. setLanguage() installs the matching
// QTranslator on the application; Qt then sends QEvent::LanguageChange to
// every widget, and each widget re-sets its texts in its retranslate().
#pragma once

#include <QString>
#include <QStringList>

namespace shardscope::ui {

// "en" or "zh_CN". Anything starting with "zh" means Chinese; anything else English.
QString normalizeLanguage(const QString& code);
// Whether `code` names a language the GUI has (en*, zh*): --lang refuses others.
bool offersLanguage(const QString& code);
// The startup language: $SHARDSCOPE_LANG if set, else the system locale (zh* -> zh_CN).
QString defaultLanguage();
// Installs the translator for `code` (replacing the previous one). Returns
// false if the embedded translation could not be loaded (English stays).
bool setLanguage(const QString& code);
QString currentLanguage();
// The languages offered in the switch, as codes, and their names in themselves.
QStringList availableLanguages();
QString languageName(const QString& code);

}  // namespace shardscope::ui
