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
  const std::string_view text(value);
  const std::string ours = std::to_string(rank) + ":" + std::to_string(step) + ":";
  if (!text.starts_with(ours)) return;
  const std::string_view ms_text = text.substr(ours.size());
  int ms = -1;
  const auto [end, error] = std::from_chars(ms_text.data(), ms_text.data() + ms_text.size(), ms);
  if (error != std::errc() || end != ms_text.data() + ms_text.size() || ms < 0 || ms > 600'000)
    throw std::runtime_error("SHARDSCOPE_SLOW_SAVE=" + std::string(text) +
                             ": expected RANK:STEP:MS with MS a whole number of milliseconds from 0 to 600000");
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace shardscope
