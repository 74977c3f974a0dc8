// Internal: a data-service server: accepts TCP connections and answers their request frames.
//
// Contract:
// - Start() binds `options.host:options.port` (port 0 = a free port; port() reports the bound one),
//   listens, and starts the network thread, which owns the sockets and runs Asio's reactor. Failure:
//   Unavailable naming the address and the error.
// - Each request frame (kind >= 16) is handed to `handler(frame)`, which runs on `options.executor` (or
//   the server's own pool), never on the network thread, so a slow handler delays nothing else. Several
//   requests of one connection run concurrently; each answer is written as soon as it is ready (any
//   order): a response frame with the handler's bytes, or an error frame with its status. An answer
//   larger than the limit becomes a ResourceExhausted error frame.
// - A frame the decoder refuses (bad magic, version, kind or flags; payload above
//   `max_payload_bytes`), or a frame only clients accept, closes that connection after an error frame
//   with call id 0 that says why; other connections are unaffected.
// - A cancel frame drops the answer of that call when it comes (the handler is not interrupted yet).
// - Stop() (also run by the destructor): stops accepting, closes every connection, requests stop on
//   every running handler (they see it through their stop token, e.g. AsyncEvent::Wait and the Reactor
//   return Cancelled) and waits for them, then joins the network thread. Handlers must observe their
//   stop token or finish on their own. Idempotent; never call it from a handler.
//
//   absl::StatusOr<std::unique_ptr<Server>> server = Server::Start({}, EchoHandler{});
//   uint16_t port = (*server)->port();
#ifndef SLUICE_DISTRIBUTE_SERVICE_SERVER_H_
#define SLUICE_DISTRIBUTE_SERVICE_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distribute/service/frame.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"

namespace sluice::service {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // The largest request payload accepted, and the largest answer sent.
  uint32_t max_payload_bytes = kDefaultMaxPayloadBytes;
  // Where handlers run (must outlive the server); nullptr = a pool of `handler_threads` the server owns.
  Executor* executor = nullptr;
  int handler_threads = 2;
};

// Called on the handler executor with the request; its stop token is the server's.
using RequestHandler = std::function<Task<absl::StatusOr<std::string>>(Frame request)>;

class Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options, RequestHandler handler);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  uint16_t port() const;
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_SERVER_H_
