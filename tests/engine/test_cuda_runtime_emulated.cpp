// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA emulation's own rules (tests/engine/cuda_emulation), which the GPU
// tests run on in CI: streams run their work in order while the host goes on,
// a stream waits for an event's record as of the wait (a later record does not
// change it, a destroyed event does not end it), the legacy default stream
// waits for blocking streams only, work is refused where a GPU refuses it (a
// kernel on another device's stream, host memory where device memory must be,
// over 48 KiB of dynamic shared memory without cudaFuncSetAttribute), and
// events time what they bracket.
#include <QTest>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "cuda_runtime.h"

namespace {

__global__ void add_one(float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1.0f;
}

__global__ void uses_shared(float* x) {
  SS_DYNAMIC_SHARED(shared);
  if (threadIdx.x == 0) x[0] = static_cast<float>(shared[0] == 0xFF);
}

// A piece of stream work that holds its stream until `open` is set.
void hold(cudaStream_t stream, std::atomic<bool>& open) {
  cuda_emulation::enqueue(stream, [&open] {
    while (!open.load()) std::this_thread::yield();
  });
}

template <typename T>
T* device_array(int n) {
  T* p = nullptr;
  if (cudaMalloc(&p, sizeof(T) * static_cast<std::size_t>(n)) != cudaSuccess) throw std::bad_alloc();
  cudaMemset(p, 0, sizeof(T) * static_cast<std::size_t>(n));
  return p;
}

}  // namespace

class TestCudaRuntimeEmulated : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void streams_run_in_order_while_the_host_goes_on() {
    cudaStream_t s = nullptr;
    QCOMPARE(cudaStreamCreate(&s), cudaSuccess);
    float* x = device_array<float>(64);
    std::atomic<bool> open{false};
    hold(s, open);
    SS_LAUNCH(add_one, 1, 64, 0, s)(x, 64);
    SS_LAUNCH(add_one, 1, 64, 0, s)(x, 64);
    QCOMPARE(cudaStreamQuery(s), cudaErrorNotReady);  // queued behind the held work
    open = true;
    QCOMPARE(cudaStreamSynchronize(s), cudaSuccess);
    float host[64];
    QCOMPARE(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
    for (float v : host) QCOMPARE(v, 2.0f);
    cudaFree(x);
    cudaStreamDestroy(s);
  }

  void a_wait_keeps_the_record_it_saw() {
    cudaStream_t a = nullptr, b = nullptr, c = nullptr;
    cudaStreamCreate(&a);
    cudaStreamCreate(&b);
    cudaStreamCreate(&c);
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    std::atomic<bool> open{false};
    hold(a, open);
    QCOMPARE(cudaEventRecord(e, a), cudaSuccess);  // done once `a` is released
    QCOMPARE(cudaStreamWaitEvent(c, e, 0), cudaSuccess);
    std::atomic<bool> c_ran{false};
    cuda_emulation::enqueue(c, [&c_ran] { c_ran = true; });
    QCOMPARE(cudaEventRecord(e, b), cudaSuccess);  // a later record on an idle stream
    QCOMPARE(cudaStreamSynchronize(b), cudaSuccess);
    QCOMPARE(cudaEventDestroy(e), cudaSuccess);  // destroyed while `c` still waits for its record
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QVERIFY(!c_ran);  // still waiting for a's record
    open = true;
    QCOMPARE(cudaStreamSynchronize(c), cudaSuccess);
    QVERIFY(c_ran);
    for (cudaStream_t s : {a, b, c}) cudaStreamDestroy(s);
  }

  void the_default_stream_waits_for_blocking_streams_only() {
    cudaStream_t blocking = nullptr, non_blocking = nullptr;
    cudaStreamCreate(&blocking);
    cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking);
    float* x = device_array<float>(1);
    std::atomic<bool> open{false};
    hold(non_blocking, open);
    float one = 1.0f;
    QCOMPARE(cudaMemcpy(x, &one, sizeof one, cudaMemcpyHostToDevice), cudaSuccess);  // returns: not held
    std::atomic<bool> copied{false};
    hold(blocking, open);
    std::thread copier([&] {
      float back = 0.0f;
      cudaMemcpy(&back, x, sizeof back, cudaMemcpyDeviceToHost);  // waits for `blocking`
      copied = back == 1.0f;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QVERIFY(!copied);
    open = true;
    copier.join();
    QVERIFY(copied);
    cudaFree(x);
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(non_blocking);
  }

  void work_a_gpu_refuses_is_refused() {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    cudaStream_t s = nullptr;
    cudaSetDevice(0);
    cudaStreamCreate(&s);
    float* x = device_array<float>(32);
    float host[32] = {};
    // Host memory where a kernel reads device memory.
    QVERIFY_THROWS_EXCEPTION(std::logic_error, SS_LAUNCH(add_one, 1, 32, 0, s)(host, 32));
    // A copy whose device side is host memory.
    QCOMPARE(cudaMemcpyAsync(host, host, sizeof host, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
    // Over 48 KiB of dynamic shared memory, then allowed by the attribute.
    QVERIFY_THROWS_EXCEPTION(std::logic_error, SS_LAUNCH(uses_shared, 1, 32, 64 * 1024, s)(x));
    QCOMPARE(cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024), cudaSuccess);
    SS_LAUNCH(uses_shared, 1, 32, 64 * 1024, s)(x);
    QCOMPARE(cudaStreamSynchronize(s), cudaSuccess);
    if (devices >= 2) {  // a kernel on device 0's stream while device 1 is current
      QCOMPARE(cudaSetDevice(1), cudaSuccess);
      QVERIFY_THROWS_EXCEPTION(std::logic_error, SS_LAUNCH(add_one, 1, 32, 0, s)(x, 32));
      cudaEvent_t on_one = nullptr;
      cudaEventCreate(&on_one);
      QCOMPARE(cudaEventRecord(on_one, s), cudaErrorInvalidResourceHandle);  // event of device 1, stream of 0
      cudaEventDestroy(on_one);
      cudaSetDevice(0);
    }
    cudaFree(x);
    cudaStreamDestroy(s);
  }

  void events_time_what_they_bracket() {
    cudaStream_t s = nullptr;
    cudaStreamCreate(&s);
    cudaEvent_t start = nullptr, end = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&end);
    cudaEventRecord(start, s);
    cuda_emulation::enqueue(s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
    cudaEventRecord(end, s);
    QCOMPARE(cudaEventSynchronize(end), cudaSuccess);
    float ms = 0.0f;
    QCOMPARE(cudaEventElapsedTime(&ms, start, end), cudaSuccess);
    QVERIFY2(ms >= 29.0f && ms < 5000.0f, qPrintable(QString::number(ms)));
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    cudaStreamDestroy(s);
  }
};

QTEST_GUILESS_MAIN(TestCudaRuntimeEmulated)
#include "test_cuda_runtime_emulated.moc"
