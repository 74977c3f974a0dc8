#include "distribute/service/dispatcher_link.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice::service {

absl::StatusOr<std::unique_ptr<DispatcherLink>> DispatcherLink::Connect(const std::string& address,
                                                                        ClientOptions options) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(address);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(parsed->host, parsed->port, options);
  if (!client.ok()) return client.status();
  auto first = std::make_shared<Generation>(std::move(*client), options.executor);
  return std::unique_ptr<DispatcherLink>(new DispatcherLink(*std::move(parsed), options, std::move(first)));
}

DispatcherLink::DispatcherLink(HostPort address, ClientOptions options, std::shared_ptr<Generation> first)
    : address_(std::move(address)), options_(options), current_(std::move(first)) {}

DispatcherLink::~DispatcherLink() { Current()->client->Close(); }

std::shared_ptr<DispatcherLink::Generation> DispatcherLink::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::shared_ptr<Client> DispatcherLink::client() const { return Current()->client; }

bool DispatcherLink::connected() const { return Current()->client->connected(); }

absl::Status DispatcherLink::GivenUp(const Generation& generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation.given_up;
}

Task<absl::StatusOr<Frame>> DispatcherLink::CallOnce(FrameKind kind, std::string payload) {
  return Current()->client->Call(kind, std::move(payload));
}

Task<absl::StatusOr<Frame>> DispatcherLink::Call(FrameKind kind, std::string payload) {
  return CallAcross(this, kind, std::move(payload));
}

Task<absl::StatusOr<Frame>> DispatcherLink::CallAcross(DispatcherLink* link, FrameKind kind,
                                                       std::string payload) {
  for (;;) {
    std::shared_ptr<Generation> generation = link->Current();
    absl::StatusOr<Frame> answer = co_await generation->client->Call(kind, payload);
    // Only a lost connection is waited out; an Unavailable the dispatcher itself answered is its answer.
    if (answer.ok() || answer.status().code() != absl::StatusCode::kUnavailable ||
        generation->client->connected()) {
      co_return answer;
    }
    absl::Status woken = co_await generation->replaced.Wait();
    if (!woken.ok()) co_return woken;
    if (absl::Status given_up = link->GivenUp(*generation); !given_up.ok()) co_return given_up;
  }
}

absl::Status DispatcherLink::Reconnect() {
  std::lock_guard<std::mutex> one_at_a_time(reconnect_mu_);
  std::shared_ptr<Generation> lost = Current();
  if (lost->client->connected()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address_.host, address_.port, options_);
  if (!client.ok()) return client.status();
  auto fresh = std::make_shared<Generation>(std::move(*client), options_.executor);
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(fresh);
  }
  lost->replaced.Set();
  return absl::OkStatus();
}

void DispatcherLink::GiveUp(absl::Status why) {
  std::shared_ptr<Generation> current;
  {
    std::lock_guard<std::mutex> lock(mu_);
    current = current_;
    current->given_up = std::move(why);
  }
  current->replaced.Set();
}

}  // namespace sluice::service
