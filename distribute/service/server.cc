#include "distribute/service/server.h"

#include <chrono>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "asio/executor_work_guard.hpp"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/post.hpp"
#include "asio/steady_timer.hpp"
#include "distribute/service/connection.h"
#include "distribute/service/messages.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/thread_pool.h"

namespace sluice::service {
namespace {

constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);

// One accepted connection and the calls it has in flight (network thread only).
struct ServerConnection {
  std::shared_ptr<FrameConnection> connection;
  std::unordered_map<uint64_t, bool> in_flight;  // call id -> the client cancelled it

  void Answer(uint64_t call_id, std::string frame_bytes) {
    auto it = in_flight.find(call_id);
    if (it == in_flight.end()) return;
    const bool cancelled = it->second;
    in_flight.erase(it);
    if (!cancelled) connection->Send(std::move(frame_bytes));
  }
};

}  // namespace

// Members are declared so that destruction runs sockets down before the io_context they belong to.
struct Server::Impl {
  Impl(ServerOptions server_options, RequestHandler request_handler)
      : options(std::move(server_options)), handler(std::move(request_handler)) {}

  void Accept();
  void OnFrame(ServerConnection* conn, Frame frame);
  void Stop();

  const ServerOptions options;
  const RequestHandler handler;
  std::unique_ptr<ThreadPool> own_pool;
  Executor* executor = nullptr;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::ip::tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};  // after an accept error (EMFILE, ENOBUFS, ...)
  uint16_t port = 0;
  std::string address;  // "host:port", for messages

  // Network thread only.
  bool stopping = false;
  std::unordered_map<ServerConnection*, std::shared_ptr<ServerConnection>> connections;

  AsyncScope handlers;
  std::mutex stop_mu;  // held through Stop(), so a second caller returns only once it is done
  bool stopped = false;
  std::thread thread;
};

namespace {

// Runs one request off the network thread and posts its answer back to it. `server` outlives the task:
// Stop() joins every handler before the server goes away.
Task<void> RunHandler(Server::Impl* server, std::shared_ptr<ServerConnection> conn, Frame request) {
  ResumeOn hop{server->executor};  // GCC12 PR100611: no temporary inside co_await
  co_await hop;
  const uint64_t call_id = request.call_id;
  const FrameKind kind = request.kind;
  absl::StatusOr<std::string> answer = absl::UnknownError("no answer");
  Task<absl::StatusOr<std::string>> task;
  try {
    task = server->handler(std::move(request));
  } catch (const std::exception& e) {
    answer =
        absl::InternalError(absl::StrCat("service handler for ", FrameKindName(kind), " threw: ", e.what()));
  }
  if (task.valid()) answer = co_await std::move(task);
  if (answer.ok() && answer->size() > server->options.max_payload_bytes) {
    answer = absl::ResourceExhaustedError(absl::StrCat("answer to ", FrameKindName(kind), " call ", call_id,
                                                       " has ", answer->size(), " bytes, above the limit of ",
                                                       server->options.max_payload_bytes));
  }
  std::string bytes;
  if (answer.ok()) {
    AppendFrame(&bytes, FrameKind::kResponse, call_id, *answer);
  } else {
    AppendFrame(&bytes, FrameKind::kError, call_id, EncodeErrorPayload(answer.status()));
  }
  asio::post(server->io, [conn = std::move(conn), call_id, bytes = std::move(bytes)]() mutable {
    conn->Answer(call_id, std::move(bytes));
  });
}

}  // namespace

void Server::Impl::Accept() {
  acceptor.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (stopping || ec == asio::error::operation_aborted) return;
    if (!ec) {
      auto conn = std::make_shared<ServerConnection>();
      conn->connection = std::make_shared<FrameConnection>(std::move(socket), options.max_payload_bytes);
      ServerConnection* raw = conn.get();
      connections.emplace(raw, conn);
      // Raw pointers: the callbacks run on the network thread while the connection is in `connections`.
      conn->connection->Start([this, raw](Frame frame) { OnFrame(raw, std::move(frame)); },
                              [this, raw](const absl::Status&) { connections.erase(raw); });
      Accept();
      return;
    }
    // Out of descriptors or buffers: re-arming at once would spin on the same error; wait a little so
    // connections closing meanwhile free what the next accept needs.
    accept_retry.expires_after(kAcceptRetryDelay);
    accept_retry.async_wait([this](const asio::error_code& wait_ec) {
      if (stopping || wait_ec == asio::error::operation_aborted) return;
      Accept();
    });
  });
}

void Server::Impl::OnFrame(ServerConnection* conn, Frame frame) {
  if (frame.kind == FrameKind::kCancel) {
    auto it = conn->in_flight.find(frame.call_id);
    if (it != conn->in_flight.end()) it->second = true;
    return;
  }
  if (!IsRequestKind(frame.kind)) {
    conn->connection->Close(absl::InvalidArgumentError(
                                absl::StrCat("service server received a ", FrameKindName(frame.kind),
                                             " frame (call ", frame.call_id, "), which only clients accept")),
                            /*tell_peer=*/true);
    return;
  }
  if (!conn->in_flight.emplace(frame.call_id, false).second) {
    conn->connection->Close(absl::InvalidArgumentError(absl::StrCat("service server: call id ", frame.call_id,
                                                                    " is already in flight")),
                            /*tell_peer=*/true);
    return;
  }
  auto it = connections.find(conn);
  handlers.Spawn(RunHandler(this, it->second, std::move(frame)));
}

void Server::Impl::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu);
  if (stopped || !thread.joinable()) return;
  stopped = true;
  // Close everything on the network thread and wait for it, so no request is dispatched (and no handler
  // spawned) once the handlers are joined below.
  std::promise<void> closed;
  asio::post(io, [this, &closed] {
    stopping = true;
    asio::error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
    auto all = std::move(connections);
    connections.clear();
    for (auto& [raw, conn] : all) conn->connection->Abort(absl::CancelledError("service server stopping"));
    closed.set_value();
  });
  closed.get_future().wait();
  handlers.RequestStop();
  handlers.JoinBlocking();
  // Their answers were posted to the network thread, which runs them (and drops them) before it exits.
  work.reset();
  thread.join();
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options, RequestHandler handler) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  const ServerOptions& opts = impl->options;
  impl->address = absl::StrCat(opts.host, ":", opts.port);
  asio::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(opts.host, ec);
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("service server: bad address ", opts.host, ": ", ec.message()));
  const asio::ip::tcp::endpoint endpoint(ip, opts.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("service server: listening on ", impl->address, ": ", ec.message()));
  impl->port = impl->acceptor.local_endpoint(ec).port();
  if (ec)
    return absl::UnavailableError(
        absl::StrCat("service server: bound address of ", impl->address, ": ", ec.message()));
  impl->address = absl::StrCat(opts.host, ":", impl->port);
  if (opts.executor != nullptr) {
    impl->executor = opts.executor;
  } else {
    impl->own_pool = std::make_unique<ThreadPool>(opts.handler_threads);
    impl->executor = impl->own_pool.get();
  }
  impl->work.emplace(asio::make_work_guard(impl->io));
  impl->Accept();  // before the thread starts, which publishes it to that thread
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

uint16_t Server::port() const { return impl_->port; }

void Server::Stop() { impl_->Stop(); }

}  // namespace sluice::service
