// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/fault_injection.h"

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace shardscope {

namespace {
bool first_run() {
  const char* restarts = std::getenv("SHARDSCOPE_RESTART_COUNT");
  return restarts == nullptr || std::string(restarts) == "0";
}
}  // namespace

void FaultInjection::before_backward(int rank, std::int64_t step) const {
  if (const char* at = std::getenv("SHARDSCOPE_KILL_AT_STEP");
      at != nullptr && std::to_string(rank) + ":" + std::to_string(step) == at && first_run())
    std::raise(SIGKILL);
  if (rank == fail_rank_ && step == fail_step_ && first_run())  // a restarted job runs on (launch --max-restarts)
    throw std::runtime_error("injected failure (--inject-failure) before backward of step " + std::to_string(step));
}

bool FaultInjection::overflow(Backend& backend, int rank, std::int64_t step, DType dtype, std::uint16_t* gradients,
                              std::int64_t count) const {
  if (rank != overflow_rank_ || step != overflow_step_ || count <= 0) return false;
  const std::uint16_t inf = dtype == DType::f16 ? 0x7C00 : 0x7F80;
  backend.upload(gradients, &inf, sizeof inf);
  return true;
}

void FaultInjection::before_checkpoint_commit(std::int64_t step) const {
  const char* at = std::getenv("SHARDSCOPE_KILL_BEFORE_COMMIT");
  if (at != nullptr && std::to_string(step) == at) std::raise(SIGKILL);
}

void FaultInjection::before_checkpoint_write(int rank, std::int64_t step) const {
  const char* value = std::getenv("SHARDSCOPE_SLOW_SAVE");
  if (value == nullptr) return;
  // RANK:STEP:MS, checked whole on every rank and step, so a typo is refused rather than never matching.
  const std::string_view text(value);
  std::int64_t fields[3] = {-1, -1, -1};
  const char* at = text.data();
  const char* const stop = text.data() + text.size();
  bool valid = true;
  for (int i = 0; i < 3 && valid; ++i) {
    const auto [end, error] = std::from_chars(at, stop, fields[i]);
    valid = error == std::errc() && fields[i] >= 0 && (i < 2 ? end != stop && *end == ':' : end == stop);
    at = end + 1;
  }
  if (!valid || fields[2] > 600'000)
    throw std::runtime_error("SHARDSCOPE_SLOW_SAVE=" + std::string(text) +
                             ": expected RANK:STEP:MS with MS a whole number of milliseconds from 0 to 600000");
  if (fields[0] != rank || fields[1] != step) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(fields[2]));
}

}  // namespace shardscope
