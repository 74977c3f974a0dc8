// Internal: a client connection to a data-service server, with many calls in flight on one TCP stream.
//
// Contract:
// - Connect() resolves `host`, connects (blocking the caller) and starts the client's network thread,
//   which owns the socket and runs Asio's reactor. Failure: Unavailable naming the address.
// - Call(kind, payload) sends a request frame with a fresh call id and completes with the response frame
//   whose id matches, whatever order responses arrive in. An error frame becomes its status (the handler's
//   own code and message). The connection ending fails every pending call: Unavailable with the reason
//   (peer closed, mid-frame close, a frame the decoder refused, the peer's connection-level error frame),
//   Cancelled after Close(). A call started after the end fails the same way, without suspending.
// - Cancellation: a stop request on the awaiting coroutine's token completes that call at once with
//   Cancelled and sends the server a cancel frame; a response that still arrives for it is dropped.
// - Resumption: on `options.executor` when given (a ThreadPool), else on the network thread, inline; keep
//   those continuations short and never call Close() or destroy the client from one.
// - Close() (also run by the destructor) closes the socket, fails pending calls, and returns once the
//   network thread has run every handler and exited. Idempotent, thread-safe. The client object may go
//   away while Call tasks are still alive: each task owns what it touches.
// - Threading: Call and Close may be called from any thread.
//
//   absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect("127.0.0.1", port);
//   absl::StatusOr<Frame> reply = SyncWait((*client)->Call(FrameKind::kPing, "hello"));
#ifndef SLUICE_DISTRIBUTE_SERVICE_CLIENT_H_
#define SLUICE_DISTRIBUTE_SERVICE_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distribute/service/frame.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"

namespace sluice::service {

struct ClientOptions {
  // The largest response payload accepted (a larger one closes the connection), and the largest request
  // sent (a larger one fails that call alone with ResourceExhausted). Keep it at the server's limit.
  uint32_t max_payload_bytes = kDefaultMaxPayloadBytes;
  // Where completed calls resume (must outlive the client's calls); nullptr = the network thread.
  Executor* executor = nullptr;
  // Connect gives up after this (Unavailable: "Connection timed out"), whatever the kernel would retry.
  std::chrono::milliseconds connect_timeout{10000};
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(std::string host, uint16_t port,
                                                         ClientOptions options = {});
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // `kind` must be a request kind (IsRequestKind), else the call fails with InvalidArgument; a payload
  // above options.max_payload_bytes fails with ResourceExhausted. Neither touches the connection.
  Task<absl::StatusOr<Frame>> Call(FrameKind kind, std::string payload);
  // False once the connection ended (before the calls it fails complete) or Close() ran.
  bool connected() const;
  void Close();

  struct Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Calls and blocks for the answer at most `timeout`, then Cancelled: for a goodbye sent while stopping,
// whose caller's own stop token is already set and which must not hang on a dispatcher that went quiet.
absl::StatusOr<Frame> CallWithin(Client& client, FrameKind kind, std::string payload,
                                 std::chrono::milliseconds timeout);

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_CLIENT_H_
