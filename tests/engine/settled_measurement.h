// SPDX-License-Identifier: GPL-3.0-or-later
// Checks of a bubble measured on the virtual CPU clock against its formula.
// That clock times each op by its thread's CPU time, which carries the load
// beside the run: on 2 shared cores an op preempted mid-way refills its caches,
// and an op on the pipeline's critical path that ran slow adds idle time to
// every stage after it. A run of six flushes under two busy loops read 7 points
// above the formula where the runs before and after it read within 2 (CI, ZB-V
// and interleaved at pp 4 x m 8). So such a check measures up to three times and
// holds when one measurement meets all of its conditions; a schedule that runs
// the wrong order, or a formula that is wrong, misses on every one.
#pragma once

#include <QByteArray>
#include <QtGlobal>
#include <functional>
#include <initializer_list>

namespace shardscope::testing {

// attempt() measures once and returns what missed (empty when every condition
// held). Returns the empty text on the first attempt that holds, else each
// attempt's misses.
inline QByteArray first_settled_measurement(const std::function<QByteArray()>& attempt, int attempts = 3) {
  QByteArray misses;
  for (int i = 1; i <= attempts; ++i) {
    const QByteArray missed = attempt();
    if (missed.isEmpty()) return {};
    qInfo("measurement %d of %d missed: %s", i, attempts, missed.constData());
    misses += "measurement " + QByteArray::number(i) + ": " + missed + "; ";
  }
  return misses;
}

struct Condition {
  bool holds;
  const char* text;
};

// The first condition that fails, named, with the numbers measured; empty when all hold.
inline QByteArray first_miss(std::initializer_list<Condition> conditions, const QByteArray& numbers) {
  for (const Condition& c : conditions)
    if (!c.holds) return QByteArray(c.text) + " (" + numbers + ")";
  return {};
}

}  // namespace shardscope::testing
