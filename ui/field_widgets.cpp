// SPDX-License-Identifier: GPL-3.0-or-later
#include "field_widgets.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QLineEdit>
#include <QSlider>
#include <QSpinBox>
#include <algorithm>
#include <climits>
#include <cmath>

#include "i18n.h"

namespace shardscope::ui {

namespace {

QString qtext(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

bool chinese() {
  return currentLanguage() == QLatin1String("zh_CN");
}

// Shows 25 and 0.001 rather than 25.000000 and 0.001000: the value's digits
// up to the box's decimals, trailing zeros dropped.
class CompactDoubleSpinBox final : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double value) const override {
    QString text = locale().toString(value, 'f', decimals());
    if (!isGroupSeparatorShown()) text.remove(locale().groupSeparator());  // as QDoubleSpinBox does
    const QChar point = locale().decimalPoint().at(0);
    if (text.contains(point)) {
      while (text.endsWith(QLatin1Char('0'))) text.chop(1);
      if (text.endsWith(point)) text.chop(1);
    }
    return text;
  }
};

QWidget* makeNumberBox(const RunField& field, QWidget* parent) {
  auto* box = new CompactDoubleSpinBox(parent);
  constexpr int kDecimals = 6;
  const double tick = std::pow(10.0, -kDecimals);
  const NumberRange& r = field.range;
  box->setDecimals(kDecimals);
  box->setRange(r.min_open ? r.min + tick : r.min, std::isinf(r.max) ? 1e9 : (r.max_open ? r.max - tick : r.max));
  box->setSingleStep(r.max <= 10.0 ? 0.0001 : 1.0);
  return box;
}

// Drops a wheel event over an unfocused widget: ignored and filtered, the
// event goes on to the parent (the scroll area), as QApplication passes an
// unaccepted wheel event up.
class WheelGuard final : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Wheel) {
      const auto* widget = qobject_cast<QWidget*>(watched);
      if (widget != nullptr && !widget->hasFocus()) {
        event->ignore();
        return true;
      }
    }
    return QObject::eventFilter(watched, event);
  }
};

}  // namespace

void ignoreWheelUnlessFocused(QWidget* widget) {
  static auto* guard = new WheelGuard(QCoreApplication::instance());  // one filter for every guarded widget
  widget->setFocusPolicy(Qt::StrongFocus);  // not Qt::WheelFocus: the wheel does not take the focus either
  widget->installEventFilter(guard);
}

void ignoreWheelOnUnfocusedFields(QWidget* root) {
  for (QAbstractSpinBox* box : root->findChildren<QAbstractSpinBox*>()) ignoreWheelUnlessFocused(box);
  for (QComboBox* box : root->findChildren<QComboBox*>()) ignoreWheelUnlessFocused(box);
  for (QSlider* slider : root->findChildren<QSlider*>()) ignoreWheelUnlessFocused(slider);
}

QWidget* makeFieldWidget(const RunField& field, QWidget* parent) {
  QWidget* widget = nullptr;
  switch (field.kind) {
    case FieldKind::integer: {
      auto* spin = new QSpinBox(parent);
      spin->setRange(static_cast<int>(std::max<std::int64_t>(field.min, INT_MIN)),
                     static_cast<int>(std::min<std::int64_t>(field.max, INT_MAX)));
      widget = spin;
      break;
    }
    case FieldKind::number:
      widget = makeNumberBox(field, parent);
      break;
    case FieldKind::choice: {
      auto* combo = new QComboBox(parent);
      for (std::string_view choice : field.choices) combo->addItem(qtext(choice), qtext(choice));
      widget = combo;
      break;
    }
    case FieldKind::toggle:
      widget = new QCheckBox(parent);
      break;
    case FieldKind::text:
    case FieldKind::list:
      widget = new QLineEdit(parent);
      break;
  }
  widget->setObjectName(qtext(field.key));
  return widget;
}

nlohmann::json fieldWidgetValue(const RunField& field, const QWidget* widget) {
  switch (field.kind) {
    case FieldKind::integer:
      return static_cast<const QSpinBox*>(widget)->value();
    case FieldKind::number:
      return static_cast<const QDoubleSpinBox*>(widget)->value();
    case FieldKind::choice:
      return static_cast<const QComboBox*>(widget)->currentData().toString().toStdString();
    case FieldKind::toggle:
      return static_cast<const QCheckBox*>(widget)->isChecked();
    case FieldKind::text:
      return static_cast<const QLineEdit*>(widget)->text().trimmed().toStdString();
    case FieldKind::list:
      try {
        return field_value_from_text(field, static_cast<const QLineEdit*>(widget)->text().trimmed().toStdString());
      } catch (const ConfigError&) {
        return nlohmann::json::array();
      }
  }
  return {};
}

void setFieldWidgetValue(const RunField& field, QWidget* widget, const nlohmann::json& value) {
  switch (field.kind) {
    case FieldKind::integer: {
      auto* spin = static_cast<QSpinBox*>(widget);
      spin->setValue(static_cast<int>(std::clamp<std::int64_t>(value.get<std::int64_t>(), spin->minimum(),
                                                               spin->maximum())));
      break;
    }
    case FieldKind::number:
      static_cast<QDoubleSpinBox*>(widget)->setValue(value.get<double>());
      break;
    case FieldKind::choice: {
      auto* combo = static_cast<QComboBox*>(widget);
      combo->setCurrentIndex(std::max(0, combo->findData(QString::fromStdString(value.get<std::string>()))));
      break;
    }
    case FieldKind::toggle:
      static_cast<QCheckBox*>(widget)->setChecked(value.get<bool>());
      break;
    case FieldKind::text:
    case FieldKind::list:
      static_cast<QLineEdit*>(widget)->setText(QString::fromStdString(field_value_text(field, value)));
      break;
  }
}

void onFieldWidgetEdited(const RunField& field, QWidget* widget, QObject* context,
                         const std::function<void()>& edited) {
  switch (field.kind) {
    case FieldKind::integer:
      QObject::connect(static_cast<QSpinBox*>(widget), &QSpinBox::valueChanged, context, edited);
      break;
    case FieldKind::number:
      QObject::connect(static_cast<QDoubleSpinBox*>(widget), &QDoubleSpinBox::valueChanged, context, edited);
      break;
    case FieldKind::choice:
      QObject::connect(static_cast<QComboBox*>(widget), &QComboBox::currentIndexChanged, context, edited);
      break;
    case FieldKind::toggle:
      QObject::connect(static_cast<QCheckBox*>(widget), &QCheckBox::toggled, context, edited);
      break;
    case FieldKind::text:
    case FieldKind::list:
      QObject::connect(static_cast<QLineEdit*>(widget), &QLineEdit::textChanged, context, edited);
      break;
  }
}

QString fieldLabel(const RunField& field) {
  return qtext(chinese() ? field.label.zh : field.label.en);
}

QString fieldHelp(const RunField& field) {
  return qtext(chinese() ? field.help.zh : field.help.en).replace(QStringLiteral("\n      "), QStringLiteral(" "));
}

QString panelText(const FieldError& error) {
  const auto label = [](std::string_view key) {
    const RunField* field = find_run_field(key);
    if (field == nullptr || field->label.empty()) return std::string(key);
    return std::string(chinese() ? field->label.zh : field->label.en);
  };
  return QString::fromStdString(error.text(label, chinese()));
}

}  // namespace shardscope::ui
