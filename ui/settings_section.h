// SPDX-License-Identifier: GPL-3.0-or-later
// A titled group of settings that folds away (the config panel's "Model and
// data", "Parallel layout", "Precision", "Clock and device"): a header button
// with an arrow over a form of label and field rows. Folded, only the header
// shows, so the settings a lesson is about fit a 720 px screen.
#pragma once

#include <QWidget>

class QFormLayout;
class QToolButton;

namespace shardscope::ui {

class SettingsSection : public QWidget {
  Q_OBJECT

 public:
  explicit SettingsSection(QWidget* parent = nullptr);

  QFormLayout* form() const { return form_; }
  QToolButton* header() const { return header_; }
  void setTitle(const QString& title);
  bool isExpanded() const;
  void setExpanded(bool expanded);

 private:
  QToolButton* header_;
  QWidget* body_;
  QFormLayout* form_;
};

}  // namespace shardscope::ui
