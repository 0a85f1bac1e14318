// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings_section.h"

#include <QFormLayout>
#include <QToolButton>
#include <QVBoxLayout>

namespace shardscope::ui {

SettingsSection::SettingsSection(QWidget* parent)
    : QWidget(parent), header_(new QToolButton(this)), body_(new QWidget(this)), form_(new QFormLayout(body_)) {
  header_->setCheckable(true);
  header_->setChecked(true);
  header_->setAutoRaise(true);
  header_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  header_->setArrowType(Qt::DownArrow);
  header_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  QFont bold = header_->font();
  bold.setBold(true);
  header_->setFont(bold);
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a narrow column puts a wide field under its label
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(header_);
  layout->addWidget(body_);
  connect(header_, &QToolButton::toggled, this, &SettingsSection::setExpanded);
}

void SettingsSection::setTitle(const QString& title) {
  header_->setText(title);
}

bool SettingsSection::isExpanded() const {
  return header_->isChecked();
}

void SettingsSection::setExpanded(bool expanded) {
  header_->setChecked(expanded);
  header_->setArrowType(expanded ? Qt::DownArrow : Qt::RightArrow);
  body_->setVisible(expanded);
}

}  // namespace shardscope::ui
