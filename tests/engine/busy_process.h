// SPDX-License-Identifier: GPL-3.0-or-later
// A CPU-heavy process beside a run, for as long as it lives: the clock tests
// check that virtual time does not follow the machine's load.
#pragma once

#include <QProcess>

namespace shardscope::test {

class BusyProcess {
 public:
  BusyProcess() {
    process_.start("/bin/sh", {"-c", "while :; do :; done"});
    process_.waitForStarted();
  }
  ~BusyProcess() {
    process_.kill();
    process_.waitForFinished();
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;

 private:
  QProcess process_;
};

}  // namespace shardscope::test
