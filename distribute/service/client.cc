#include "distribute/service/client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "asio/connect.hpp"
#include "asio/executor_work_guard.hpp"
#include "asio/io_context.hpp"
#include "asio/ip/tcp.hpp"
#include "asio/post.hpp"
#include "distribute/service/connection.h"
#include "distribute/service/messages.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/sync_wait.h"

namespace sluice::service {
namespace {
class CallAwaiter;
}  // namespace

struct Client::Impl {
  explicit Impl(ClientOptions client_options) : options(client_options) {}
  ~Impl() { Close(); }

  // Network thread only.
  void Start(CallAwaiter* call);
  void Cancel(uint64_t call_id);
  void Complete(CallAwaiter* call, absl::StatusOr<Frame> result);
  void OnFrame(Frame frame);
  void OnClose(const absl::Status& why);

  // Any thread.
  void Close();

  const ClientOptions options;
  std::string peer;  // "host:port", for messages
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<uint64_t> next_call_id{1};

  // Posting a call's start and closing exclude each other, so every start is posted before the close
  // and thus runs (io_context::run returns only once every posted handler ran).
  std::mutex mu;
  bool closed = false;
  std::mutex join_mu;

  // Network thread only.
  std::shared_ptr<FrameConnection> connection;
  std::unordered_map<uint64_t, CallAwaiter*> pending;
  bool down = false;
  absl::Status down_status;
  std::atomic<bool> lost{false};  // `down`, for other threads: set before the pending calls fail
};

namespace {

class CallAwaiter {
 public:
  CallAwaiter(std::shared_ptr<Client::Impl> impl, FrameKind kind, std::string payload)
      : impl_(std::move(impl)), kind_(kind), payload_(std::move(payload)) {}
  CallAwaiter(const CallAwaiter&) = delete;
  CallAwaiter& operator=(const CallAwaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) {
    std::stop_token token;
    if constexpr (sluice::detail::SluicePromise<Promise>) token = awaiting.promise().stop_token();
    return Suspend(awaiting, std::move(token));
  }
  absl::StatusOr<Frame> await_resume() { return std::move(result_); }

 private:
  friend struct Client::Impl;

  // Runs on the thread that requests stop: it only flags and posts, so Complete() may wait for it.
  struct CancelFn {
    CallAwaiter* call;
    void operator()() noexcept {
      call->cancel_requested_.store(true, std::memory_order_release);
      // Weak: a handler that never runs (the network thread already left) must not keep Impl alive.
      asio::post(call->impl_->io, [weak = std::weak_ptr<Client::Impl>(call->impl_), id = call->id_] {
        if (std::shared_ptr<Client::Impl> impl = weak.lock()) impl->Cancel(id);
      });
    }
  };

  bool Suspend(std::coroutine_handle<> awaiting, std::stop_token token) {
    // A local owner: once the start is posted the call may finish, and its frame go, before we return.
    std::shared_ptr<Client::Impl> impl = impl_;
    handle_ = awaiting;
    id_ = impl->next_call_id.fetch_add(1, std::memory_order_relaxed);
    if (token.stop_requested()) {
      result_ = absl::CancelledError(absl::StrCat("service call ", id_, " to ", impl->peer, " cancelled"));
      return false;
    }
    // Registered before the start is posted, so the network thread may reset it in Complete().
    stop_callback_.emplace(std::move(token), CancelFn{this});
    std::lock_guard<std::mutex> lock(impl->mu);
    if (impl->closed) {
      stop_callback_.reset();
      result_ = absl::CancelledError(absl::StrCat("service client for ", impl->peer, " is closed"));
      return false;
    }
    asio::post(impl->io, [call = this] { call->impl_->Start(call); });
    return true;  // `this` may be gone already
  }

  std::shared_ptr<Client::Impl> impl_;
  FrameKind kind_;
  std::string payload_;
  uint64_t id_ = 0;
  std::coroutine_handle<> handle_;
  std::atomic<bool> cancel_requested_{false};
  std::optional<std::stop_callback<CancelFn>> stop_callback_;
  absl::StatusOr<Frame> result_ = absl::UnknownError("service call did not complete");
};

Task<absl::StatusOr<Frame>> RunCall(std::shared_ptr<Client::Impl> impl, FrameKind kind, std::string payload) {
  if (!IsRequestKind(kind)) {
    co_return absl::InvalidArgumentError(
        absl::StrCat("service call: frame kind ", static_cast<int>(kind), " is not a request"));
  }
  // Checked here, not left to the server: a payload of 4 GiB or more would not even fit the length field.
  if (payload.size() > impl->options.max_payload_bytes) {
    co_return absl::ResourceExhaustedError(absl::StrCat("service call: request of ", payload.size(),
                                                        " bytes exceeds the limit of ",
                                                        impl->options.max_payload_bytes));
  }
  CallAwaiter call(std::move(impl), kind, std::move(payload));
  co_return co_await call;
}

}  // namespace

void Client::Impl::Start(CallAwaiter* call) {
  if (down) {
    Complete(call, down_status);
    return;
  }
  pending.emplace(call->id_, call);
  // A cancel posted before this start found nothing to cancel; the flag catches it here.
  if (call->cancel_requested_.load(std::memory_order_acquire)) {
    Complete(call,
             absl::CancelledError(absl::StrCat("service call ", call->id_, " to ", peer, " cancelled")));
    return;
  }
  std::string bytes;
  AppendFrame(&bytes, call->kind_, call->id_, call->payload_);
  std::string().swap(call->payload_);
  connection->Send(std::move(bytes));
}

void Client::Impl::Cancel(uint64_t call_id) {
  auto it = pending.find(call_id);
  if (it == pending.end()) return;  // answered already, or not started yet (Start checks the flag)
  Complete(it->second,
           absl::CancelledError(absl::StrCat("service call ", call_id, " to ", peer, " cancelled")));
  std::string bytes;
  AppendFrame(&bytes, FrameKind::kCancel, call_id, {});
  connection->Send(std::move(bytes));
}

void Client::Impl::Complete(CallAwaiter* call, absl::StatusOr<Frame> result) {
  pending.erase(call->id_);
  call->result_ = std::move(result);
  // Waits for a cancel callback running on another thread; afterwards nothing else touches `call`.
  call->stop_callback_.reset();
  std::coroutine_handle<> handle = call->handle_;
  if (options.executor != nullptr) {
    options.executor->Execute(handle);
  } else {
    sluice::detail::Resume(handle);
  }
}

void Client::Impl::OnFrame(Frame frame) {
  if (frame.kind == FrameKind::kResponse || frame.kind == FrameKind::kError) {
    if (frame.kind == FrameKind::kError && frame.call_id == 0) {
      // The server's reason for closing the connection.
      connection->Abort(DecodeErrorPayload(frame.payload));
      return;
    }
    auto it = pending.find(frame.call_id);
    if (it == pending.end()) return;  // a call cancelled here whose answer was already on its way
    if (frame.kind == FrameKind::kResponse) {
      Complete(it->second, std::move(frame));
    } else {
      Complete(it->second, DecodeErrorPayload(frame.payload));
    }
    return;
  }
  connection->Close(absl::InvalidArgumentError(absl::StrCat("service client received a ",
                                                            FrameKindName(frame.kind), " frame (call ",
                                                            frame.call_id, "), which only servers accept")),
                    /*tell_peer=*/true);
}

void Client::Impl::OnClose(const absl::Status& why) {
  down = true;
  lost.store(true, std::memory_order_release);
  down_status = why.code() == absl::StatusCode::kCancelled
                    ? why
                    : absl::UnavailableError(absl::StrCat("connection to ", peer,
                                                          " lost: ", absl::StatusCodeToString(why.code()),
                                                          ": ", why.message()));
  std::vector<CallAwaiter*> calls;
  calls.reserve(pending.size());
  for (auto& [id, call] : pending) calls.push_back(call);
  for (CallAwaiter* call : calls) Complete(call, down_status);
}

void Client::Impl::Close() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!closed) {
      closed = true;
      if (connection != nullptr) {
        asio::post(io, [this] {
          connection->Abort(absl::CancelledError(absl::StrCat("service client for ", peer, " closed")));
        });
      }
      work.reset();
    }
  }
  std::lock_guard<std::mutex> lock(join_mu);
  if (thread.joinable()) thread.join();
}

namespace {

// asio::connect, bounded: a host that drops SYNs would otherwise hold the caller for the kernel's
// retries (minutes). Tries each address in turn within what is left of `timeout`.
void ConnectWithin(asio::ip::tcp::socket& socket, const asio::ip::tcp::resolver::results_type& endpoints,
                   std::chrono::milliseconds timeout, asio::error_code& ec) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ec = asio::error::host_not_found;
  for (const auto& entry : endpoints) {
    asio::error_code ignored;
    socket.close(ignored);
    socket.open(entry.endpoint().protocol(), ec);
    if (ec) continue;
    socket.non_blocking(true, ec);
    if (ec) continue;
    // Not socket.connect: Asio's synchronous connect waits without a bound even on a non-blocking socket.
    ec = {};
    if (::connect(socket.native_handle(), entry.endpoint().data(),
                  static_cast<socklen_t>(entry.endpoint().size())) != 0) {
      ec = asio::error_code(errno, asio::error::get_system_category());
    }
    if (ec == asio::error::in_progress || ec == asio::error::would_block) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd fd{socket.native_handle(), POLLOUT, 0};
      int ready = -1;
      do {
        ready = ::poll(&fd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      } while (ready < 0 && errno == EINTR);
      if (ready == 0) {
        ec = asio::error::timed_out;
      } else {
        int error = 0;
        socklen_t length = sizeof error;
        if (ready < 0 || ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
          error = errno;
        }
        ec = asio::error_code(error, asio::error::get_system_category());
      }
    }
    if (!ec) {
      socket.non_blocking(false, ec);  // the connection's own operations are asynchronous anyway
      if (!ec) return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (!ec) ec = asio::error::timed_out;
      break;
    }
  }
  asio::error_code ignored;
  socket.close(ignored);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(std::string host, uint16_t port,
                                                        ClientOptions options) {
  auto impl = std::make_shared<Impl>(options);
  impl->peer = absl::StrCat(host, ":", port);
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(impl->io);
  asio::ip::tcp::resolver::results_type endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("service client: resolving ", host, ": ", ec.message()));
  asio::ip::tcp::socket socket(impl->io);
  ConnectWithin(socket, endpoints, options.connect_timeout, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("service client: connecting to ", impl->peer, ": ", ec.message()));
  }
  // Set up before the network thread starts, which publishes all of it to that thread.
  impl->connection = std::make_shared<FrameConnection>(std::move(socket), options.max_payload_bytes);
  impl->work.emplace(asio::make_work_guard(impl->io));
  Impl* raw = impl.get();  // the connection's callbacks run on the network thread, joined before ~Impl
  impl->connection->Start([raw](Frame frame) { raw->OnFrame(std::move(frame)); },
                          [raw](const absl::Status& why) { raw->OnClose(why); });
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() { Close(); }

Task<absl::StatusOr<Frame>> Client::Call(FrameKind kind, std::string payload) {
  return RunCall(impl_, kind, std::move(payload));
}

void Client::Close() { impl_->Close(); }

bool Client::connected() const {
  if (impl_->lost.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return !impl_->closed;
}

absl::StatusOr<Frame> CallWithin(Client& client, FrameKind kind, std::string payload,
                                 std::chrono::milliseconds timeout) {
  std::stop_source deadline;
  // Stopped (and joined) on return, when the answer came first.
  std::jthread timer([&deadline, timeout](std::stop_token answered) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, answered, timeout, [] { return false; })) deadline.request_stop();
  });
  return SyncWait(client.Call(kind, std::move(payload)), deadline.get_token());
}

}  // namespace sluice::service
