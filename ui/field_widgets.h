// SPDX-License-Identifier: GPL-3.0-or-later
// Widgets for the fields of the run-config schema (config/run_schema.h): a spin
// box for integers, a decimal spin box for numbers, a combo box for choices, a
// check box for toggles, a line edit for text and lists. Each takes its range,
// items, object name (the field's key), label and tooltip from the field's row.
#pragma once

#include <QString>
#include <functional>
#include <nlohmann/json.hpp>

#include "config/run_schema.h"

class QObject;
class QWidget;

namespace shardscope::ui {

QWidget* makeFieldWidget(const RunField& field, QWidget* parent);
nlohmann::json fieldWidgetValue(const RunField& field, const QWidget* widget);
void setFieldWidgetValue(const RunField& field, QWidget* widget, const nlohmann::json& value);
// Calls `edited` whenever the user changes the widget's value.
void onFieldWidgetEdited(const RunField& field, QWidget* widget, QObject* context, const std::function<void()>& edited);

// The mouse wheel over `widget` changes it only while it has the keyboard
// focus (a click or Tab gives it); otherwise the wheel goes to the widget
// under it, so scrolling a column of fields never edits the one the pointer
// passes over. For spin boxes and combo boxes.
void ignoreWheelUnlessFocused(QWidget* widget);
// The same for every spin box, combo box and slider under `root` (not its scroll bars).
void ignoreWheelOnUnfocusedFields(QWidget* root);

// The field's panel label and help, in the current language.
QString fieldLabel(const RunField& field);
QString fieldHelp(const RunField& field);
// A refused config in the panel's words: each field named by its label (the key where it has none).
QString panelText(const FieldError& error);

}  // namespace shardscope::ui
