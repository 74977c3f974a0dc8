// Internal: a worker's or a consumer's connection to the dispatcher, which outlives the dispatcher's
// restarts (docs/service.md, "Dispatcher restarts").
//
// Contract:
// - Connect(address): the first connection, blocking; Unavailable naming the address when it fails.
// - CallOnce(kind, payload): one call on the current connection (Client::Call's contract).
// - Call(kind, payload): for calls that may be repeated (heartbeats, GetSplit with its split index).
//   When the connection is lost under the call, the call waits for the owner's Reconnect() and is made
//   again on the new connection, until it gets an answer, the awaiting coroutine's stop is requested
//   (Cancelled), or the owner gives up (GiveUp's status).
// - Reconnect(): blocking, for the owner's heartbeat thread. When the current connection is lost it
//   connects a fresh one (one attempt, bounded by ClientOptions::connect_timeout) and wakes the waiting
//   calls; OK when already connected or now connected, else the connect's error.
// - GiveUp(why): the calls waiting for a reconnection, and later calls that lose their connection, fail
//   with `why` until a Reconnect() succeeds.
// - Calls waiting for a reconnection resume on ClientOptions::executor (inline on the thread that
//   reconnects, gives up or requests stop when none is given).
// - connected(): whether the current connection is up.
// - Threading: every member may be called from any thread. Waiting calls must end (their stop requested)
//   before the link is destroyed; the destructor closes the connection.
//
//   absl::StatusOr<std::unique_ptr<DispatcherLink>> link = DispatcherLink::Connect("127.0.0.1:5050", {});
//   absl::StatusOr<Frame> split = co_await (*link)->Call(FrameKind::kGetSplit, payload);
#ifndef SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_LINK_H_
#define SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_LINK_H_

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "distribute/service/address.h"
#include "distribute/service/client.h"
#include "distribute/service/frame.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/task.h"

namespace sluice::service {

class DispatcherLink {
 public:
  static absl::StatusOr<std::unique_ptr<DispatcherLink>> Connect(const std::string& address,
                                                                 ClientOptions options = {});
  DispatcherLink(const DispatcherLink&) = delete;
  DispatcherLink& operator=(const DispatcherLink&) = delete;
  ~DispatcherLink();

  Task<absl::StatusOr<Frame>> CallOnce(FrameKind kind, std::string payload);
  Task<absl::StatusOr<Frame>> Call(FrameKind kind, std::string payload);
  absl::Status Reconnect();
  void GiveUp(absl::Status why);
  bool connected() const;
  // The current connection, for a goodbye (CallWithin).
  std::shared_ptr<Client> client() const;

  // One connection and what its callers wait on when it is lost.
  struct Generation {
    Generation(std::shared_ptr<Client> connected, Executor* executor)
        : client(std::move(connected)), replaced(false, executor) {}
    std::shared_ptr<Client> client;
    // Set when a new connection takes over, or the owner gives up. Its waiters resume on the client's
    // executor, not inline on the owner's heartbeat thread, which must not run pipeline code.
    AsyncEvent replaced;
    absl::Status given_up;  // under the link's mutex: OK unless GiveUp ended this generation's waits
  };

 private:
  DispatcherLink(HostPort address, ClientOptions options, std::shared_ptr<Generation> first);
  std::shared_ptr<Generation> Current() const;
  absl::Status GivenUp(const Generation& generation) const;
  static Task<absl::StatusOr<Frame>> CallAcross(DispatcherLink* link, FrameKind kind, std::string payload);

  const HostPort address_;
  const ClientOptions options_;
  std::mutex reconnect_mu_;  // one Reconnect at a time
  mutable std::mutex mu_;
  std::shared_ptr<Generation> current_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_LINK_H_
