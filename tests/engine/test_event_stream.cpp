// SPDX-License-Identifier: GPL-3.0-or-later
// Event streams over TCP (events/event_stream.h): two senders' events merge in
// one collector, each sender's in its order, the records decoded as a
// recording's; a stream that is not one, or is cut off mid-record, is named;
// no listener and a port in use are errors that say so.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QTest>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/output_file.h"
#include "events/event_queue.h"
#include "events/event_stream.h"
#include "events/recording.h"

using namespace shardscope;

namespace {

// A plain TCP connection to the collector, for bytes no sender would write.
int raw_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return -1;
  return fd;
}

void send_bytes(int fd, const std::vector<unsigned char>& bytes) {
  QCOMPARE(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

std::vector<Event> drain_all(EventQueue& queue) {
  std::vector<Event> events;
  while (queue.drain(events, 1 << 20) > 0) {
  }
  return events;
}

}  // namespace

class TestEventStream : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void two_senders_merge_in_order() {
    EventQueue queue(1 << 16);
    EventCollector collector("127.0.0.1", 0, &queue);
    const StreamAddress address{"127.0.0.1", collector.port()};
    auto send_rank = [&](int rank) {
      EventStreamSender sender(address, R"({"dp": 2})", "test");
      for (int i = 0; i < 5000; ++i) {
        Event e;
        e.kind = EventKind::log;  // never dropped
        e.rank = rank;
        e.step = i;
        e.set_text("rank " + std::to_string(rank) + " 日志");
        sender.emit(e);
      }
      sender.close();
      QCOMPARE(sender.events_sent(), std::uint64_t{5000});
    };
    std::thread first(send_rank, 1), second(send_rank, 2);
    first.join();
    second.join();
    QVERIFY(collector.wait_for_ended(2, 10.0));
    QCOMPARE(collector.streams_opened(), 2);
    QCOMPARE(collector.error(), std::string());
    QCOMPARE(collector.metadata_json(), std::string(R"({"dp": 2})"));
    std::map<int, std::int64_t> next_step;
    for (const Event& e : drain_all(queue)) {
      QCOMPARE(e.step, next_step[e.rank]++);  // each stream in its sender's order
      QCOMPARE(std::string(e.text_view()), "rank " + std::to_string(e.rank) + " 日志");
    }
    QCOMPARE(next_step, (std::map<int, std::int64_t>{{1, 5000}, {2, 5000}}));
    QCOMPARE(collector.events_received(), std::uint64_t{10000});
  }

  void a_stream_that_is_not_one_is_named() {
    EventQueue queue;
    EventCollector collector("127.0.0.1", 0, &queue);
    const int fd = raw_connection(collector.port());
    QVERIFY(fd >= 0);
    const std::string text = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    send_bytes(fd, {text.begin(), text.end()});
    QVERIFY(collector.wait_for_ended(1, 5.0));
    ::close(fd);
    QVERIFY2(collector.error().find("stream 0: not a ShardScope event stream") != std::string::npos,
             collector.error().c_str());
    QVERIFY(drain_all(queue).empty());
  }

  void a_stream_cut_mid_record_is_named() {
    EventQueue queue;
    EventCollector collector("127.0.0.1", 0, &queue);
    const int fd = raw_connection(collector.port());
    QVERIFY(fd >= 0);
    std::vector<unsigned char> bytes = recording_header("{}");
    std::vector<unsigned char> record(kRecordSize);
    Event e;
    e.kind = EventKind::error;
    e.rank = 3;
    encode_event(e, record.data());
    bytes.insert(bytes.end(), record.begin(), record.end());
    bytes.insert(bytes.end(), record.begin(), record.begin() + 100);  // the next record, cut off
    send_bytes(fd, bytes);
    ::close(fd);
    QVERIFY(collector.wait_for_ended(1, 5.0));
    QVERIFY2(collector.error().find("stream 0 ended 100 bytes into a record") != std::string::npos,
             collector.error().c_str());
    const std::vector<Event> events = drain_all(queue);
    QCOMPARE(events.size(), std::size_t{1});
    QCOMPARE(events[0].rank, 3);
  }

  void no_listener_and_a_busy_port_say_so() {
    EventQueue queue;
    auto collector = std::make_unique<EventCollector>("127.0.0.1", 0, &queue);
    const int port = collector->port();
    try {
      EventCollector again("127.0.0.1", port, &queue);
      QFAIL("a second listener on the same port");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("listening on 127.0.0.1:" + std::to_string(port)) != std::string::npos,
               e.what());
    }
    collector.reset();  // nobody listens there now
    try {
      EventStreamSender sender({"127.0.0.1", port}, "{}", "--events-to", 0.3);
      QFAIL("connected to nobody");
    } catch (const OutputError& e) {
      QVERIFY2(std::string(e.what()).find("--events-to 127.0.0.1:" + std::to_string(port) + ": cannot connect") !=
                   std::string::npos,
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestEventStream)
#include "test_event_stream.moc"
