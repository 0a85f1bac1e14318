// SPDX-License-Identifier: GPL-3.0-or-later
// Device detection through the CUDA plugin: on any machine the probe answers
// (GPUs, or a reason a user can act on) without throwing or crashing, and asking
// for a CUDA backend where none is usable fails with that reason.
#include <QTemporaryDir>
#include <QTest>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/buffer.h"
#include "core/error.h"
#include "ops/device.h"
#include "ops/nccl.h"
#include "ops/plugin_loader.h"

using namespace shardscope;

namespace {

// Sets a plugin's environment override (SHARDSCOPE_CUDA_PLUGIN unless told)
// for one scope, restoring the previous value.
class PluginOverride {
 public:
  explicit PluginOverride(const std::string& path, const char* variable = "SHARDSCOPE_CUDA_PLUGIN")
      : variable_(variable) {
    if (const char* old = std::getenv(variable_)) previous_ = old;
    ::setenv(variable_, path.c_str(), 1);
  }
  ~PluginOverride() {
    if (previous_)
      ::setenv(variable_, previous_->c_str(), 1);
    else
      ::unsetenv(variable_);
  }
  PluginOverride(const PluginOverride&) = delete;
  PluginOverride& operator=(const PluginOverride&) = delete;

 private:
  const char* variable_;
  std::optional<std::string> previous_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class TestDevice : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void device_kind_names();
  void probe_answers_with_gpus_or_a_reason();
  void cuda_backend_where_none_is_usable_names_the_reason();
  void missing_plugin_is_reported();
  void unloadable_plugin_is_reported();
  void stale_plugin_is_refused_by_its_version();
  void plugin_loader_reasons_for_any_plugin();
  void device_memory_without_gpu_throws();
  void mixed_precision_helpers_refuse_a_cpu_backend();
  void nccl_probe_answers_with_a_version_or_a_reason();
};

void TestDevice::device_kind_names() {
  QCOMPARE(device_kind_name(DeviceKind::cpu), std::string_view("cpu"));
  QCOMPARE(device_kind_name(DeviceKind::cuda), std::string_view("cuda"));
}

void TestDevice::probe_answers_with_gpus_or_a_reason() {
  DeviceProbe probe;
  try {
    probe = probe_cuda();
  } catch (...) {
    QFAIL("probe_cuda() threw");
  }
  // Printed so a CI log shows what this machine has.
  if (probe.available()) {
    QVERIFY(probe.reason.empty());
    QVERIFY(!probe.plugin_path.empty());
    for (const DeviceInfo& gpu : probe.gpus) {
      qInfo("cuda:%d %s, %.1f GiB, sm_%d%d", gpu.index, gpu.name.c_str(),
            static_cast<double>(gpu.total_bytes) / (1 << 30), gpu.compute_major, gpu.compute_minor);
      QCOMPARE(gpu.kind, DeviceKind::cuda);
      QVERIFY(!gpu.name.empty());
      QVERIFY(gpu.total_bytes > 0);
      QVERIFY(gpu.free_bytes <= gpu.total_bytes);
    }
  } else {
    qInfo("no GPU: %s", probe.reason.c_str());
    QVERIFY(!probe.reason.empty());
    QVERIFY2(contains(probe.reason, "no CUDA plugin built") || contains(probe.reason, "CUDA runtime not found") ||
                 contains(probe.reason, "no CUDA driver or GPU"),
             probe.reason.c_str());
  }
  // A second probe gives the same answer (the plugin stays loaded).
  const DeviceProbe again = probe_cuda();
  QCOMPARE(again.gpus.size(), probe.gpus.size());
  QCOMPARE(again.reason, probe.reason);
}

void TestDevice::cuda_backend_where_none_is_usable_names_the_reason() {
  const DeviceProbe probe = probe_cuda();
  if (probe.available()) {
    // With a GPU: a real backend, and a device that does not exist is refused.
    auto backend = make_cuda_backend(0);
    QVERIFY(backend != nullptr);
    QVERIFY2(backend->name().rfind("cuda:0 (", 0) == 0, backend->name().c_str());
    const int missing = static_cast<int>(probe.gpus.size());
    try {
      make_cuda_backend(missing);
      QFAIL("a CUDA backend for a GPU that does not exist was made");
    } catch (const std::runtime_error& e) {
      QVERIFY2(contains(e.what(), "no GPU " + std::to_string(missing)), e.what());
    }
    return;
  }
  try {
    make_cuda_backend(0);
    QFAIL("make_cuda_backend succeeded without a usable GPU");
  } catch (const std::runtime_error& e) {
    QVERIFY2(contains(e.what(), "CUDA backend unavailable"), e.what());
    QVERIFY2(contains(e.what(), probe.reason), e.what());
  }
}

void TestDevice::missing_plugin_is_reported() {
  const PluginOverride override_path("/nonexistent/libshardscope_cuda.so");
  const DeviceProbe probe = probe_cuda();
  QVERIFY(!probe.available());
  QVERIFY2(contains(probe.reason, "no CUDA plugin built"), probe.reason.c_str());
  QVERIFY2(contains(probe.reason, "/nonexistent/libshardscope_cuda.so"), probe.reason.c_str());
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, make_cuda_backend(0));
}

void TestDevice::unloadable_plugin_is_reported() {
  // A file that exists but cannot be loaded, as when libcudart is missing: dlopen's error is passed on.
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("libshardscope_cuda.so").toStdString();
  std::ofstream(path) << "not a shared library\n";
  const PluginOverride override_path(path);
  const DeviceProbe probe = probe_cuda();
  QVERIFY(!probe.available());
  QVERIFY2(contains(probe.reason, "CUDA runtime not found: "), probe.reason.c_str());
  QVERIFY2(contains(probe.reason, path), probe.reason.c_str());
}

void TestDevice::stale_plugin_is_refused_by_its_version() {
  const PluginOverride override_path(SHARDSCOPE_STALE_PLUGIN);
  const DeviceProbe probe = probe_cuda();
  QVERIFY(!probe.available());
  QVERIFY2(contains(probe.reason, "has ABI version 0, expected "), probe.reason.c_str());
  QVERIFY2(contains(probe.reason, "rebuild"), probe.reason.c_str());
}

// The loader the CUDA and NCCL plugins share (ops/plugin_loader.h), for a
// plugin of a third name, so each reason is seen in its own words.
void TestDevice::plugin_loader_reasons_for_any_plugin() {
  PluginSearch search{"Test",
                      "Test runtime",
                      "testcc",
                      "libshardscope_no_such_plugin.so",
                      "SHARDSCOPE_TEST_PLUGIN",
                      "",
                      "shardscope_cuda_abi_version",
                      7};
  ::unsetenv("SHARDSCOPE_TEST_PLUGIN");
  QCOMPARE(plugin_candidate(search), std::string("libshardscope_no_such_plugin.so"));
  OpenedPlugin opened = open_plugin(search);
  QVERIFY(opened.handle == nullptr);
  QCOMPARE(opened.reason, std::string("no Test plugin built (ShardScope was compiled without testcc)"));
  search.build_dir = "/nonexistent-build";
  opened = open_plugin(search);
  QVERIFY2(opened.reason.rfind("no Test plugin built: libshardscope_no_such_plugin.so is not next to the executable (",
                               0) == 0 &&
               contains(opened.reason, "), in the build directory (/nonexistent-build) or on LD_LIBRARY_PATH"),
           opened.reason.c_str());
  {
    const PluginOverride missing("/nonexistent/libshardscope_test.so", "SHARDSCOPE_TEST_PLUGIN");
    QCOMPARE(open_plugin(search).reason,
             std::string("no Test plugin built: /nonexistent/libshardscope_test.so does not exist "
                         "(SHARDSCOPE_TEST_PLUGIN)"));
  }
  {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("libshardscope_test.so").toStdString();
    std::ofstream(path) << "not a shared library\n";
    const PluginOverride unloadable(path, "SHARDSCOPE_TEST_PLUGIN");
    opened = open_plugin(search);
    QVERIFY2(opened.reason.rfind("Test runtime not found: ", 0) == 0 && contains(opened.reason, path),
             opened.reason.c_str());
  }
  const std::string stale = SHARDSCOPE_STALE_PLUGIN;
  const PluginOverride other(stale, "SHARDSCOPE_TEST_PLUGIN");
  QCOMPARE(plugin_candidate(search), stale);
  QCOMPARE(open_plugin(search).reason,
           "Test plugin " + stale + " has ABI version 0, expected 7 (rebuild it with this engine)");
  search.abi_symbol = "shardscope_test_abi_version";
  opened = open_plugin(search);
  QVERIFY2(opened.reason.rfind("Test plugin " + stale + " is not a ShardScope Test plugin: ", 0) == 0,
           opened.reason.c_str());
  // Its version accepted, the plugin opens; an entry point it lacks makes it incomplete.
  search.abi_symbol = "shardscope_cuda_abi_version";
  search.abi_version = 0;
  opened = open_plugin(search);
  QVERIFY2(opened.handle != nullptr && opened.reason.empty(), opened.reason.c_str());
  QCOMPARE(opened.path, stale);
  int (*device_count)(int*, char*, std::size_t) = nullptr;
  QVERIFY(!find_symbol(opened.handle, "shardscope_cuda_device_count", device_count));
  const std::string incomplete = incomplete_plugin_reason(search, opened.path);
  QVERIFY2(incomplete.rfind("Test plugin " + stale + " is incomplete: ", 0) == 0, incomplete.c_str());
}

void TestDevice::device_memory_without_gpu_throws() {
  const PluginOverride override_path("/nonexistent/libshardscope_cuda.so");
  try {
    cuda_device_alloc(0, 1024);
    QFAIL("cuda_device_alloc succeeded without a plugin");
  } catch (const std::runtime_error& e) {
    QVERIFY2(contains(e.what(), "no CUDA plugin built"), e.what());
  }
  float host = 0.0f;
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_copy_to_host(0, &host, &host, sizeof host));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_zero(0, &host, sizeof host));
  cuda_device_free(0, nullptr);  // freeing null is a no-op, as cudaFree(nullptr)
  // A rank ledger on GPU memory that is not there: its first Buffer says which memory and why.
  const auto memory = make_cuda_device_memory(0);
  QCOMPARE(memory->name(), std::string("cuda:0"));
  std::size_t free_bytes = 0, total_bytes = 0;
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_mem_get_info(0, free_bytes, total_bytes));
  DeviceUsage usage;
  QVERIFY(!memory->device_usage(usage));  // no device figures, and no throw, in a memory sample
  MemoryLedger ledger;
  ledger.set_device_memory(memory.get());
  try {
    Buffer b(ledger, MemoryCategory::parameters, 4096);
    QFAIL("a GPU buffer was allocated without a plugin");
  } catch (const OutOfMemory& e) {
    QVERIFY2(contains(e.what(), "cuda:0") && contains(e.what(), "4096 bytes of parameters") &&
                 contains(e.what(), "no CUDA plugin built"),
             e.what());
  }
  QCOMPARE(ledger.current_total(), std::int64_t{0});
}

void TestDevice::mixed_precision_helpers_refuse_a_cpu_backend() {
  // Host pointers of a CPU backend never reach a CUDA kernel: the call throws, whatever this machine has.
  auto cpu = make_cpu_backend({1});
  float value = 1.0f;
  std::uint16_t half_value = 0;
  try {
    cuda_narrow(*cpu, DType::f16, &value, &half_value, 1);
    QFAIL("cuda_narrow accepted a CPU backend");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    QVERIFY2(contains(what, "not a CUDA backend") || contains(what, "CUDA unavailable"), e.what());
  }
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_widen(*cpu, DType::bf16, &half_value, &value, 1));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_find_non_finite(*cpu, DType::f32, &value, 1));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, cuda_synchronize(*cpu));
  QVERIFY_THROWS_EXCEPTION(
      std::runtime_error, cuda_gemm_16bit(*cpu, DType::f16, Transpose::no, Transpose::no, 1, 1, 1, 1.0f, &half_value, 1,
                                          &half_value, 1, 0.0f, &half_value, 1));
}

// NCCL's plugin loads where NCCL is installed (its version needs no GPU) and
// says why where it is not; a communicator cannot be made without GPUs.
void TestDevice::nccl_probe_answers_with_a_version_or_a_reason() {
  const NcclAvailability nccl = probe_nccl();
  qInfo("NCCL: %s", nccl.available ? qPrintable(QString("version %1").arg(nccl.version)) : nccl.reason.c_str());
  if (nccl.available) {
    QVERIFY2(nccl.version >= 20000, qPrintable(QString::number(nccl.version)));  // NCCL 2.x codes are >= 20000
    QVERIFY(nccl.reason.empty());
    if (!probe_cuda().available()) {
      bool threw = false;
      try {
        nccl_init_all({0, 1});
      } catch (const std::runtime_error& e) {
        threw = contains(e.what(), "NCCL init");
      }
      QVERIFY(threw);
    }
  } else {
    QVERIFY(!nccl.reason.empty());
    QVERIFY2(contains(nccl.reason, "NCCL"), nccl.reason.c_str());
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, nccl_init_all({0, 1}));
  }
}

QTEST_GUILESS_MAIN(TestDevice)
#include "test_device.moc"
