#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "distribute/service/client.h"
#include "distribute/service/frame.h"
#include "distribute/service/server.h"
#include "gtest/gtest.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"

namespace sluice::service {
namespace service_transport_test_file {
namespace {

// Every wait in these tests is a bounded poll: it gives up (and the test fails) after this long.
constexpr auto kPatience = std::chrono::seconds(30);

bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A call awaited from this thread that gives up (Cancelled, via its stop token) after kPatience, so a
// regression fails the test instead of hanging it.
absl::StatusOr<Frame> CallBounded(Client* client, FrameKind kind, std::string payload) {
  std::stop_source stop;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kPatience, [&] { return done; })) stop.request_stop();
  });
  absl::StatusOr<Frame> result = SyncWait(client->Call(kind, std::move(payload)), stop.get_token());
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
  return result;
}

Task<absl::StatusOr<std::string>> Echo(Frame request) {
  if (request.kind == FrameKind::kGetElements)
    co_return absl::NotFoundError("no such job: " + request.payload);
  if (request.kind == FrameKind::kGetOrCreateJob) co_return request.payload + "!";  // one byte longer
  co_return std::move(request.payload);
}

// Requests wait at a gate until the test opens their slot (or the server stops them).
struct Gate {
  static constexpr int kSlots = 64;
  std::array<AsyncEvent, kSlots> open;
  std::atomic<int> arrived{0};
  std::atomic<int> cancelled{0};
};

Task<absl::StatusOr<std::string>> Gated(Gate* gate, Frame request) {
  const int slot = std::stoi(request.payload);
  gate->arrived.fetch_add(1);
  absl::Status opened = co_await gate->open[slot].Wait();
  if (!opened.ok()) {
    gate->cancelled.fetch_add(1);
    co_return opened;
  }
  co_return std::move(request.payload);
}

RequestHandler GatedHandler(Gate* gate) {
  return [gate](Frame request) { return Gated(gate, std::move(request)); };
}

// The outcome of calls spawned into a scope, in completion order.
struct Outcomes {
  std::mutex mu;
  std::vector<std::pair<int, absl::StatusOr<Frame>>> done;
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return done.size();
  }
};

Task<void> CallInto(Client* client, FrameKind kind, int slot, std::string payload, Outcomes* out) {
  Task<absl::StatusOr<Frame>> call = client->Call(kind, std::move(payload));
  absl::StatusOr<Frame> result = co_await std::move(call);
  std::lock_guard<std::mutex> lock(out->mu);
  out->done.emplace_back(slot, std::move(result));
}

std::unique_ptr<Server> StartServer(RequestHandler handler, ServerOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(std::move(options), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<Client> ConnectTo(uint16_t port, ClientOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect("127.0.0.1", port, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

TEST(TransportTest, EchoOverLoopback) {
  std::unique_ptr<Server> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->port(), 0);
  std::unique_ptr<Client> client = ConnectTo(server->port());
  ASSERT_NE(client, nullptr);

  absl::StatusOr<Frame> reply = CallBounded(client.get(), FrameKind::kPing, "hello");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->kind, FrameKind::kResponse);
  EXPECT_EQ(reply->payload, "hello");
  // A large payload crosses in many reads and writes.
  std::string big(3 << 20, 'z');
  big[12345] = 'a';
  reply = CallBounded(client.get(), FrameKind::kPing, big);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->payload, big);
  // The handler's error arrives as its own status.
  reply = CallBounded(client.get(), FrameKind::kGetElements, "j7");
  EXPECT_EQ(reply.status(), absl::NotFoundError("no such job: j7"));
  // Only request kinds can be called.
  EXPECT_EQ(CallBounded(client.get(), FrameKind::kResponse, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TransportTest, SixtyFourConcurrentCallsOnOneConnectionAnsweredOutOfOrder) {
  Gate gate;
  std::unique_ptr<Server> server = StartServer(GatedHandler(&gate));
  ASSERT_NE(server, nullptr);
  ThreadPool pool(2);
  std::unique_ptr<Client> client = ConnectTo(server->port(), {.executor = &pool});
  ASSERT_NE(client, nullptr);

  Outcomes outcomes;
  AsyncScope scope;
  for (int i = 0; i < Gate::kSlots; ++i) {
    scope.Spawn(CallInto(client.get(), FrameKind::kPing, i, std::to_string(i), &outcomes));
  }
  // All 64 are in the server's hands at once: one connection carries them together.
  ASSERT_TRUE(WaitUntil([&] { return gate.arrived.load() == Gate::kSlots; }));
  EXPECT_EQ(outcomes.size(), 0u);
  // Answer them last first, one at a time, so the completion order is known.
  for (int i = Gate::kSlots - 1; i >= 0; --i) {
    gate.open[i].Set();
    const size_t want = static_cast<size_t>(Gate::kSlots - i);
    ASSERT_TRUE(WaitUntil([&] { return outcomes.size() >= want; }))
        << "answer to call " << i << " never came";
  }
  scope.JoinBlocking();
  ASSERT_EQ(outcomes.done.size(), static_cast<size_t>(Gate::kSlots));
  for (int k = 0; k < Gate::kSlots; ++k) {
    const auto& [slot, result] = outcomes.done[k];
    EXPECT_EQ(slot, Gate::kSlots - 1 - k);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->payload, std::to_string(slot));
  }
}

TEST(TransportTest, CancellingOneCallLeavesTheConnectionUsable) {
  Gate gate;
  std::unique_ptr<Server> server = StartServer(GatedHandler(&gate));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectTo(server->port());
  ASSERT_NE(client, nullptr);

  std::stop_source stop;
  std::optional<absl::StatusOr<Frame>> cancelled;
  std::thread caller(
      [&] { cancelled.emplace(SyncWait(client->Call(FrameKind::kPing, "0"), stop.get_token())); });
  const bool arrived = WaitUntil([&] { return gate.arrived.load() == 1; });
  stop.request_stop();
  caller.join();  // the call completes on the cancel alone, the handler still waiting
  ASSERT_TRUE(arrived);
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->status().code(), absl::StatusCode::kCancelled) << cancelled->status();

  // The late answer to the cancelled call is dropped; the next call on the connection works.
  gate.open[0].Set();
  gate.open[1].Set();
  absl::StatusOr<Frame> reply = CallBounded(client.get(), FrameKind::kPing, "1");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->payload, "1");

  // Stop already requested before the call: no frame is sent at all.
  std::stop_source early;
  early.request_stop();
  EXPECT_EQ(SyncWait(client->Call(FrameKind::kPing, "2"), early.get_token()).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(gate.arrived.load(), 2);
}

TEST(TransportTest, OversizeFrameClosesTheConnectionAndFailsPendingCalls) {
  Gate gate;
  std::unique_ptr<Server> server = StartServer(GatedHandler(&gate), {.max_payload_bytes = 1024});
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectTo(server->port());
  ASSERT_NE(client, nullptr);

  Outcomes outcomes;
  AsyncScope scope;
  scope.Spawn(CallInto(client.get(), FrameKind::kPing, 0, "0", &outcomes));
  ASSERT_TRUE(WaitUntil([&] { return gate.arrived.load() == 1; }));
  scope.Spawn(CallInto(client.get(), FrameKind::kPing, 1, std::string(2000, '1'), &outcomes));
  // Both fail once the server closes the connection.
  ASSERT_TRUE(WaitUntil([&] { return outcomes.size() == 2; }));
  scope.JoinBlocking();
  ASSERT_EQ(outcomes.done.size(), 2u);
  for (const auto& [slot, result] : outcomes.done) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << slot << ": " << result.status();
    // The server's error frame says why.
    EXPECT_TRUE(absl::StrContains(result.status().message(), "2000 bytes exceeds the limit of 1024"))
        << result.status();
  }
  // The connection stays down; calls fail at once.
  EXPECT_EQ(CallBounded(client.get(), FrameKind::kPing, "x").status().code(), absl::StatusCode::kUnavailable);
  // Other connections are unaffected.
  gate.open[5].Set();
  std::unique_ptr<Client> other = ConnectTo(server->port());
  ASSERT_NE(other, nullptr);
  absl::StatusOr<Frame> reply = CallBounded(other.get(), FrameKind::kPing, "5");
  ASSERT_TRUE(reply.ok()) << reply.status();
  server->Stop();  // the first call's handler is still waiting: Stop cancels it
  EXPECT_EQ(gate.cancelled.load(), 1);
}

TEST(TransportTest, ClientRefusesOversizeResponse) {
  std::unique_ptr<Server> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectTo(server->port(), {.max_payload_bytes = 100});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(CallBounded(client.get(), FrameKind::kPing, std::string(100, 'a')).ok());
  // A request above its own limit fails alone, before anything is sent.
  EXPECT_EQ(CallBounded(client.get(), FrameKind::kPing, std::string(101, 'a')).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(CallBounded(client.get(), FrameKind::kPing, "still connected").ok());
  // The server answers a 100-byte request with a 101-byte response: the client drops the connection.
  absl::StatusOr<Frame> reply = CallBounded(client.get(), FrameKind::kGetOrCreateJob, std::string(100, 'a'));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(reply.status().message(), "101 bytes exceeds the limit of 100"))
      << reply.status();
}

// A plain listening socket on 127.0.0.1, for a peer that misbehaves on purpose.
class RawListener {
 public:
  RawListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~RawListener() { ::close(fd_); }
  uint16_t port() const { return port_; }
  // The next connection, or -1 after kPatience.
  int Accept() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kPatience).count())) != 1) return -1;
    return ::accept(fd_, nullptr, nullptr);
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Reads exactly n bytes, or fails after kPatience.
bool ReadExactly(int fd, size_t n, std::string* out) {
  out->clear();
  while (out->size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kPatience).count())) != 1) return false;
    char buf[4096];
    const ssize_t got = ::read(fd, buf, std::min(sizeof(buf), n - out->size()));
    if (got <= 0) return false;
    out->append(buf, static_cast<size_t>(got));
  }
  return true;
}

int RawConnect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

TEST(TransportTest, ServerClosingMidFrameFailsPendingCalls) {
  RawListener listener;
  std::unique_ptr<Client> client = ConnectTo(listener.port());
  ASSERT_NE(client, nullptr);
  const int peer = listener.Accept();
  ASSERT_GE(peer, 0);

  Outcomes outcomes;
  AsyncScope scope;
  scope.Spawn(CallInto(client.get(), FrameKind::kPing, 0, "abc", &outcomes));
  std::string request;
  ASSERT_TRUE(ReadExactly(peer, kFrameHeaderSize + 3, &request));
  FrameDecoder decoder;
  decoder.Feed(request);
  absl::StatusOr<std::optional<Frame>> frame = decoder.Next();
  ASSERT_TRUE(frame.ok() && frame->has_value());
  // Half of the answer, then the peer goes away.
  const std::string answer = EncodeFrame({FrameKind::kResponse, 0, (*frame)->call_id, "0123456789"});
  ASSERT_EQ(::write(peer, answer.data(), kFrameHeaderSize + 4), static_cast<ssize_t>(kFrameHeaderSize + 4));
  ::close(peer);
  ASSERT_TRUE(WaitUntil([&] { return outcomes.size() == 1; }));
  scope.JoinBlocking();
  ASSERT_EQ(outcomes.done.size(), 1u);
  const absl::Status& status = outcomes.done[0].second.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(status.message(), "in the middle of a frame (24 bytes of it received)"))
      << status;
}

TEST(TransportTest, ClientClosingMidFrameLeavesTheServerServing) {
  std::unique_ptr<Server> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  const std::string request = EncodeFrame({FrameKind::kPing, 0, 1, "0123456789"});
  for (size_t cut : {size_t{3}, kFrameHeaderSize, kFrameHeaderSize + 5}) {
    const int fd = RawConnect(server->port());
    ASSERT_EQ(::write(fd, request.data(), cut), static_cast<ssize_t>(cut));
    ::close(fd);
  }
  // Garbage from a peer speaking another protocol gets an error frame, then end of stream.
  const int fd = RawConnect(server->port());
  const std::string garbage = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_EQ(::write(fd, garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  std::string header;
  ASSERT_TRUE(ReadExactly(fd, kFrameHeaderSize, &header));
  FrameDecoder decoder;
  decoder.Feed(header);
  std::string rest;
  ASSERT_TRUE(ReadExactly(fd, static_cast<uint8_t>(header[8]), &rest));  // error payloads are short
  decoder.Feed(rest);
  absl::StatusOr<std::optional<Frame>> error = decoder.Next();
  ASSERT_TRUE(error.ok() && error->has_value());
  EXPECT_EQ((*error)->kind, FrameKind::kError);
  EXPECT_EQ((*error)->call_id, 0u);
  char byte;
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kPatience).count())), 1);
  EXPECT_EQ(::read(fd, &byte, 1), 0);  // end of stream
  ::close(fd);

  std::unique_ptr<Client> client = ConnectTo(server->port());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<Frame> reply = CallBounded(client.get(), FrameKind::kPing, "still here");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->payload, "still here");
}

TEST(TransportTest, ServerStopWithAClientMidCall) {
  Gate gate;
  std::unique_ptr<Server> server = StartServer(GatedHandler(&gate));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Client> client = ConnectTo(server->port());
  ASSERT_NE(client, nullptr);
  Outcomes outcomes;
  AsyncScope scope;
  for (int i = 0; i < 3; ++i)
    scope.Spawn(CallInto(client.get(), FrameKind::kPing, i, std::to_string(i), &outcomes));
  ASSERT_TRUE(WaitUntil([&] { return gate.arrived.load() == 3; }));

  server->Stop();  // returns with the handlers cancelled and joined
  EXPECT_EQ(gate.cancelled.load(), 3);
  ASSERT_TRUE(WaitUntil([&] { return outcomes.size() == 3; }));
  scope.JoinBlocking();
  ASSERT_EQ(outcomes.done.size(), 3u);
  for (const auto& [slot, result] : outcomes.done) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << slot << ": " << result.status();
  }
  server->Stop();  // idempotent
  server.reset();
  EXPECT_EQ(CallBounded(client.get(), FrameKind::kPing, "0").status().code(), absl::StatusCode::kUnavailable);
}

TEST(TransportTest, ClientDestroyedWithCallsInFlight) {
  Gate gate;
  std::unique_ptr<Server> server = StartServer(GatedHandler(&gate));
  ASSERT_NE(server, nullptr);
  ThreadPool pool(2);
  std::unique_ptr<Client> client = ConnectTo(server->port(), {.executor = &pool});
  ASSERT_NE(client, nullptr);
  Outcomes outcomes;
  AsyncScope scope;
  for (int i = 0; i < 8; ++i)
    scope.Spawn(CallInto(client.get(), FrameKind::kPing, i, std::to_string(i), &outcomes));
  // A call created but not yet started when the client goes away.
  Task<absl::StatusOr<Frame>> late = client->Call(FrameKind::kPing, "9");
  ASSERT_TRUE(WaitUntil([&] { return gate.arrived.load() == 8; }));

  client.reset();  // fails the 8 calls, waits for the network thread
  ASSERT_TRUE(WaitUntil([&] { return outcomes.size() == 8; }));
  scope.JoinBlocking();
  ASSERT_EQ(outcomes.done.size(), 8u);
  for (const auto& [slot, result] : outcomes.done) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << slot << ": " << result.status();
  }
  EXPECT_EQ(SyncWait(std::move(late)).status().code(), absl::StatusCode::kCancelled);
  // The server notices the client leaving; its handlers end when it stops.
  server->Stop();
  EXPECT_EQ(gate.cancelled.load(), 8);
}

TEST(TransportTest, BindAndConnectFailuresAreStatuses) {
  EXPECT_EQ(Server::Start({.host = "not an address"}, Echo).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::unique_ptr<Server> server = StartServer(Echo);
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::unique_ptr<Server>> taken = Server::Start({.port = server->port()}, Echo);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable) << taken.status();
  // A port this test holds bound but not listening refuses connections.
  const int bound = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(bound, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(bound, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect("127.0.0.1", ntohs(addr.sin_port));
  ::close(bound);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable) << client.status();
  EXPECT_TRUE(absl::StrContains(client.status().message(), "connecting to 127.0.0.1:")) << client.status();
}

// A listener that never accepts, with its queue full, drops further SYNs: the kernel would retry the
// connect for minutes. Connect gives up after connect_timeout.
TEST(TransportTest, ConnectToAPeerThatNeverAnswersTimesOut) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  // Fill the accept queue (its length is the backlog plus one) with connections nobody accepts.
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the handshakes that can finish finish
  ClientOptions options;
  options.connect_timeout = std::chrono::milliseconds(300);
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect("127.0.0.1", ntohs(addr.sin_port), options);
  for (int fd : fillers) ::close(fd);
  ::close(listener);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable) << client.status();
  EXPECT_TRUE(absl::StrContains(client.status().message(), "timed out")) << client.status();
}

}  // namespace
}  // namespace service_transport_test_file
}  // namespace sluice::service
