// SPDX-License-Identifier: GPL-3.0-or-later
// Several ranks sharing one device (one GPU, to teach on a single-GPU machine):
// the in-process communicator then moves and sums device buffers through each
// rank's communication backend, and the trainer touches device buffers only
// through backends. Checked here on a pretend device (fake_device.h) whose
// backend throws when handed host memory: every layout trains exactly as the
// host ranks do, bit for bit, and nothing is left allocated. tests/gpu runs
// the same layouts on a real GPU. The pretend device's ops run asynchronously
// on streams of their own (fake_device.h), so a missing wait between a rank's
// compute, its communication stream and its peers shows as a wrong result.
#include <QTest>
#include <cstring>
#include <memory>
#include <thread>

#include "core/half.h"
#include "engine/device_run_config.h"
#include "engine/fake_device.h"
#include "engine/lagging_backend.h"
#include "parallel/in_process_communicator.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::testing::CheckedDeviceBackend;
using shardscope::testing::FakeDevice;
using shardscope::testing::FakeDeviceMemory;
using shardscope::testing::LaggingBackend;
using shardscope::testing::layout_of_the_row;
using shardscope::testing::short_device_run;

namespace {

struct Run {
  std::vector<float> losses, eval;
  std::vector<std::vector<unsigned char>> states;  // every rank's model states
};

// lagging: each rank's compute backend queues its ops until the host waits for
// them (LaggingBackend), its comm backend runs them at once, and memory is
// reused as the CUDA glue reuses it (LaggingDevice).
Run train(const RunConfig& config, const std::shared_ptr<FakeDevice>& device, bool lagging = false) {
  RankDeviceFactory factory;
  auto lagging_device = lagging ? std::make_shared<shardscope::testing::LaggingDevice>(device) : nullptr;
  if (device != nullptr)
    factory = [device, lagging_device](int r) {
      RankDevice d;
      if (lagging_device != nullptr) {
        d.memory = std::make_unique<shardscope::testing::LaggingDeviceMemory>(lagging_device);
        auto compute = std::make_unique<LaggingBackend>(std::make_unique<CheckedDeviceBackend>(device, 1));
        LaggingBackend* raw = compute.get();
        lagging_device->attach(raw);
        compute->on_destroy = [lagging_device, raw] { lagging_device->detach(raw); };
        d.backend = std::move(compute);
        d.comm_backend = std::make_unique<CheckedDeviceBackend>(device, 1);
      } else {
        // Asynchronous streams, as on a GPU: a missing wait shows as a wrong
        // result. Blocks are zeroed and freed on the rank's compute stream, as
        // the trainer's make_cuda_device_memory(gpu, backend) does.
        auto compute = std::make_unique<CheckedDeviceBackend>(device, 1, true, 2 * r + 1);
        d.memory = std::make_unique<FakeDeviceMemory>(device, compute.get());
        d.backend = std::move(compute);
        d.comm_backend = std::make_unique<CheckedDeviceBackend>(device, 1, true, 2 * r + 2);
      }
      return d;
    };
  Trainer trainer(config, nullptr, factory);
  Run run;
  trainer.run([&](const StepMetrics& m) {
    run.losses.push_back(m.loss);
    if (m.eval_loss) run.eval.push_back(*m.eval_loss);
  });
  for (int r = 0; r < trainer.world_size(); ++r) run.states.push_back(trainer.model_state_bytes(r));
  return run;
}

// The collective results of `n` ranks in device or host memory, as host bytes.
// `lagging`: each rank's compute backend queues its ops until the host waits
// for them (a GPU stream's asynchrony at its worst) while its communication
// backend runs at once, and the rank writes every buffer through its compute
// backend right before the collective that reads it.
struct Collected {
  std::vector<std::vector<unsigned char>> all_reduce_sum, all_reduce_avg, reduce_scatter, all_gather, broadcast,
      gathered, scattered, received;
  std::vector<float> host_sum;
};

Collected collectives(int n, DType dtype, const std::shared_ptr<FakeDevice>& device, bool asynchronous = false,
                      bool lagging = false) {
  const std::int64_t count = 1000 + 7;  // not a multiple of n: uneven chunks
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto world = InProcessWorld::create(n);
  Collected out;
  out.all_reduce_sum.resize(n);
  out.all_reduce_avg.resize(n);
  out.reduce_scatter.resize(n);
  out.all_gather.resize(n);
  out.broadcast.resize(n);
  out.gathered.resize(n);
  out.scattered.resize(n);
  out.received.resize(n);
  out.host_sum.resize(n);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        std::unique_ptr<Backend> cpu = make_cpu_backend(CpuBackendOptions{1});
        std::unique_ptr<Backend> compute, comm_backend;
        std::unique_ptr<DeviceMemory> memory;
        CommDevice cd;
        Backend* ops = cpu.get();
        if (device != nullptr) {
          compute = std::make_unique<CheckedDeviceBackend>(device, 1, asynchronous, 10 + r);
          if (lagging) compute = std::make_unique<LaggingBackend>(std::move(compute));
          comm_backend = std::make_unique<CheckedDeviceBackend>(device, 1, asynchronous, 20 + r);
          memory = std::make_unique<FakeDeviceMemory>(device);
          cd = CommDevice{compute.get(), comm_backend.get(), memory.get()};
          ops = compute.get();
        }
        std::vector<int> members(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) members[static_cast<std::size_t>(i)] = i;
        auto comm = world->communicator(r, members, cd);
        // A buffer in the rank's memory, filled from host values.
        struct Block {
          void* p;
          std::int64_t bytes;
          DeviceMemory* memory;
          std::vector<unsigned char> host_copy;
          ~Block() {
            if (memory != nullptr)
              memory->release(p);
            else
              std::free(p);
          }
        };
        const auto block = [&](std::int64_t bytes) {
          auto b = std::make_unique<Block>();
          b->bytes = bytes;
          b->memory = memory.get();
          b->p = memory != nullptr ? memory->allocate_zeroed(bytes) : std::calloc(static_cast<std::size_t>(bytes), 1);
          return b;
        };
        std::vector<std::unique_ptr<Block>> stagings;  // kept until the end: queued copies read them
        const auto fill = [&](Block& b, int salt) {
          std::vector<float> values(static_cast<std::size_t>(b.bytes / esize));
          for (std::size_t i = 0; i < values.size(); ++i)
            values[i] = static_cast<float>((static_cast<int>(i) * 37 + r * 11 + salt) % 97) * 0.37f - 17.0f;
          std::vector<unsigned char> raw(static_cast<std::size_t>(b.bytes));
          if (dtype == DType::f32)
            std::memcpy(raw.data(), values.data(), raw.size());
          else
            half::narrow(dtype, values.data(), reinterpret_cast<std::uint16_t*>(raw.data()), values.size());
          // Through a staging block and a copy the compute backend may queue.
          auto staging = block(b.bytes);
          ops->upload(staging->p, raw.data(), b.bytes);
          const std::vector<unsigned char> stale(static_cast<std::size_t>(b.bytes), 0x3C);  // finite in every dtype
          ops->upload(b.p, stale.data(), b.bytes);
          ops->copy(b.p, staging->p, b.bytes);  // b holds `stale` until a lagging backend runs this
          stagings.push_back(std::move(staging));
        };
        const auto read = [&](const Block& b, std::int64_t offset = 0, std::int64_t bytes = -1) {
          std::vector<unsigned char> raw(static_cast<std::size_t>(bytes < 0 ? b.bytes : bytes));
          ops->download(raw.data(), static_cast<const unsigned char*>(b.p) + offset,
                        static_cast<std::int64_t>(raw.size()));
          return raw;
        };
        auto x = block(count * esize);
        fill(*x, 1);
        comm->all_reduce(x->p, count, dtype, ReduceOp::sum, {});
        out.all_reduce_sum[r] = read(*x);
        fill(*x, 2);
        comm->all_reduce(x->p, count, dtype, ReduceOp::average, {});
        out.all_reduce_avg[r] = read(*x);
        auto whole = block(n * count * esize);
        auto part = block(count * esize);
        fill(*whole, 3);
        comm->reduce_scatter(whole->p, part->p, count, dtype, ReduceOp::average, {});
        out.reduce_scatter[r] = read(*part);
        fill(*part, 4);
        comm->all_gather(part->p, whole->p, count, dtype, {});
        out.all_gather[r] = read(*whole);
        fill(*x, 5);
        comm->broadcast(x->p, count, dtype, n - 1, {});
        out.broadcast[r] = read(*x);
        fill(*x, 6);
        comm->gather(x->p, whole->p, count, dtype, 0, {});
        if (r == 0) out.gathered[r] = read(*whole);
        fill(*whole, 7);
        comm->scatter(whole->p, part->p, count, dtype, std::min(1, n - 1), {});
        out.scattered[r] = read(*part);
        // Pipeline: rank r sends to r + 1 (f32 activations).
        auto act = block(count * 4);
        auto before = block(count * 4);  // what act held before the message came: zeros
        if (r > 0) {
          ops->copy(before->p, act->p, count * 4);  // queued: must read act before recv overwrites it
          comm->recv(static_cast<float*>(act->p), count, r - 1, {});
          if (read(*before) != std::vector<unsigned char>(static_cast<std::size_t>(count * 4), 0))
            throw std::runtime_error("rank " + std::to_string(r) + ": recv overwrote a buffer its compute still read");
        } else {
          std::vector<float> v(static_cast<std::size_t>(count), 1.5f);
          ops->upload(act->p, v.data(), count * 4);
        }
        if (r + 1 < n) {
          ops->add(static_cast<float*>(act->p), static_cast<float*>(act->p), static_cast<float*>(act->p), count);
          comm->send(static_cast<float*>(act->p), count, r + 1, {});
        }
        out.received[r] = read(*act, 0, count * 4);
        float host_value = static_cast<float>(r + 1);
        comm->all_reduce_host(&host_value, 1, ReduceOp::sum, {});
        out.host_sum[r] = host_value;
        ops->synchronize();  // before the blocks are freed
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        world->abort(r, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  return out;
}

// The first collective whose results differ ("" when all agree).
std::string first_difference(const Collected& a, const Collected& b) {
  if (a.all_reduce_sum != b.all_reduce_sum) return "all_reduce sum";
  if (a.all_reduce_avg != b.all_reduce_avg) return "all_reduce average";
  if (a.reduce_scatter != b.reduce_scatter) return "reduce_scatter";
  if (a.all_gather != b.all_gather) return "all_gather";
  if (a.broadcast != b.broadcast) return "broadcast";
  if (a.gathered != b.gathered) return "gather";
  if (a.scattered != b.scattered) return "scatter";
  if (a.received != b.received) return "send/recv";
  if (a.host_sum != b.host_sum) return "all_reduce_host";
  return "";
}

}  // namespace

class TestSharedDevice : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void collectives_on_device_memory_match_the_host_data();
  void collectives_on_device_memory_match_the_host();
  void collectives_wait_for_the_compute_stream_data();
  void collectives_wait_for_the_compute_stream();
  void a_host_buffer_on_a_device_communicator_is_refused();
  void layouts_sharing_one_device_train_as_host_ranks_data();
  void layouts_sharing_one_device_train_as_host_ranks();
  void layouts_train_as_host_ranks_when_compute_lags_data() { layouts_sharing_one_device_train_as_host_ranks_data(); }
  void layouts_train_as_host_ranks_when_compute_lags();
};

void TestSharedDevice::collectives_on_device_memory_match_the_host_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("dtype");
  for (const int n : {2, 3, 4})
    for (const DType d : {DType::f32, DType::f16, DType::bf16})
      QTest::addRow("%d ranks %s", n, std::string(dtype_name(d)).c_str()) << n << static_cast<int>(d);
}

void TestSharedDevice::collectives_on_device_memory_match_the_host() {
  QFETCH(int, ranks);
  QFETCH(int, dtype);
  const auto d = static_cast<DType>(dtype);
  auto device = std::make_shared<FakeDevice>();
  const Collected host = collectives(ranks, d, nullptr);
  for (const bool asynchronous : {false, true}) {
    const Collected dev = collectives(ranks, d, device, asynchronous);
    QCOMPARE(first_difference(host, dev), std::string());
    const float expected_sum = static_cast<float>(ranks * (ranks + 1) / 2);
    for (const float s : dev.host_sum) QCOMPARE(s, expected_sum);
    // The sums really happened: rank 0's all-reduce is not its own input.
    QVERIFY(dev.all_reduce_sum[0] != std::vector<unsigned char>(dev.all_reduce_sum[0].size(), 0));
    QCOMPARE(device->live_blocks(), std::size_t{0});  // staging and scratch released with the communicators
  }
}

// A device collective copies and sums on the rank's communication stream: it
// must first wait for what the rank's compute stream still writes into (or
// reads from) the buffers, including before the steps a rank takes on its own
// buffers ahead of publishing them (the 16-bit average's division, the
// all-gather's own chunk, a one-rank group's copy, a message).
void TestSharedDevice::collectives_wait_for_the_compute_stream_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("dtype");
  for (const int n : {1, 2, 3})
    for (const DType d : {DType::f32, DType::f16, DType::bf16})
      QTest::addRow("%d ranks %s", n, std::string(dtype_name(d)).c_str()) << n << static_cast<int>(d);
}

void TestSharedDevice::collectives_wait_for_the_compute_stream() {
  QFETCH(int, ranks);
  QFETCH(int, dtype);
  const auto d = static_cast<DType>(dtype);
  auto device = std::make_shared<FakeDevice>();
  const Collected host = collectives(ranks, d, nullptr);
  Collected dev;
  try {
    dev = collectives(ranks, d, device, /*asynchronous=*/false, /*lagging=*/true);
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
  QCOMPARE(first_difference(host, dev), std::string());
  QCOMPARE(device->live_blocks(), std::size_t{0});
}

void TestSharedDevice::a_host_buffer_on_a_device_communicator_is_refused() {
  auto device = std::make_shared<FakeDevice>();
  auto world = InProcessWorld::create(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      CheckedDeviceBackend compute(device, 1), comm_backend(device, 1);
      FakeDeviceMemory memory(device);
      auto comm = world->communicator(r, {0, 1}, CommDevice{&compute, &comm_backend, &memory});
      std::vector<float> host(64, 1.0f);
      try {
        comm->all_reduce(host.data(), 64, ReduceOp::sum, {});
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        world->abort(r, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string all = errors[0] + " | " + errors[1];
  QVERIFY2(all.find("host pointer") != std::string::npos || all.find("not") != std::string::npos, all.c_str());
}

void TestSharedDevice::layouts_sharing_one_device_train_as_host_ranks_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("naive");
  QTest::addColumn<int>("precision");
  const int fp32 = static_cast<int>(Precision::fp32), fp16 = static_cast<int>(Precision::fp16),
            bf16 = static_cast<int>(Precision::bf16);
  QTest::newRow("one rank") << 1 << 1 << 0 << false << fp32;
  QTest::newRow("dp2 DDP") << 2 << 1 << 0 << false << fp32;
  QTest::newRow("dp2 ZeRO-1") << 2 << 1 << 1 << false << fp32;
  QTest::newRow("dp3 ZeRO-1 (uneven shards)") << 3 << 1 << 1 << false << fp32;
  QTest::newRow("dp2 ZeRO-2") << 2 << 1 << 2 << false << fp32;
  QTest::newRow("dp2 ZeRO-3") << 2 << 1 << 3 << false << fp32;
  QTest::newRow("pp2") << 1 << 2 << 0 << false << fp32;
  QTest::newRow("dp2 x pp2 ZeRO-1") << 2 << 2 << 1 << false << fp32;
  QTest::newRow("naive dp2") << 2 << 1 << 0 << true << fp32;
  QTest::newRow("naive dp2 fp16") << 2 << 1 << 0 << true << fp16;
  QTest::newRow("dp2 DDP fp16") << 2 << 1 << 0 << false << fp16;
  QTest::newRow("dp2 ZeRO-2 bf16") << 2 << 1 << 2 << false << bf16;
  QTest::newRow("dp2 ZeRO-3 fp16") << 2 << 1 << 3 << false << fp16;
  QTest::newRow("dp2 x pp2 ZeRO-1 bf16") << 2 << 2 << 1 << false << bf16;
}

void TestSharedDevice::layouts_sharing_one_device_train_as_host_ranks() {
  const RunConfig c = layout_of_the_row();
  auto device = std::make_shared<FakeDevice>();
  const Run host = train(c, nullptr);
  const Run dev = train(c, device);
  QCOMPARE(dev.losses.size(), std::size_t{3});
  QCOMPARE(dev.losses, host.losses);  // bit for bit: the same ops, the same order
  QCOMPARE(dev.eval, host.eval);
  QVERIFY(dev.states == host.states);
  QVERIFY(dev.losses.back() < dev.losses.front());
  QCOMPARE(device->live_blocks(), std::size_t{0});
}

// The same with each rank's compute stream as late as it can be (its ops run
// only when the host waits for them): every hand-over between the compute and
// communication streams, and every host read, must wait for it.
void TestSharedDevice::layouts_train_as_host_ranks_when_compute_lags() {
  const RunConfig c = layout_of_the_row();
  auto device = std::make_shared<FakeDevice>();
  const Run host = train(c, nullptr);
  const Run dev = train(c, device, /*lagging=*/true);
  QCOMPARE(dev.losses, host.losses);
  QCOMPARE(dev.eval, host.eval);
  QVERIFY(dev.states == host.states);
  QCOMPARE(device->live_blocks(), std::size_t{0});
}

QTEST_GUILESS_MAIN(TestSharedDevice)
#include "test_shared_device.moc"
