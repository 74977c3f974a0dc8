// ServiceWorkerAgreement (sluice/distribute/service.h): the WorkerAgreement of trainers in separate
// processes, each round one request the dispatcher's AgreementRegistry answers.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/service/address.h"
#include "distribute/service/client.h"
#include "distribute/service/messages.h"
#include "sluice/distribute/service.h"
#include "sluice/engine/async_scope.h"

namespace sluice::service {

struct ServiceWorkerAgreement::Impl {
  std::string name;
  int num_workers = 1;
  std::string dispatcher;
  std::unique_ptr<Client> client;
  std::mutex mu;
  std::map<int, int64_t> epochs;  // per worker: iterators begun
  AsyncScope abandons;            // requests sent without waiting; joined before the client goes
};

namespace {

Task<absl::StatusOr<bool>> Round(std::shared_ptr<ServiceWorkerAgreement::Impl> impl,
                                 AgreementRoundRequest request) {
  absl::StatusOr<Frame> answer =
      co_await impl->client->Call(FrameKind::kAgreementRound, EncodeAgreementRoundRequest(request));
  if (!answer.ok()) {
    co_return absl::Status(
        answer.status().code(),
        absl::StrCat("agreement '", impl->name, "' at ", impl->dispatcher, ", epoch ", request.epoch,
                     " step ", request.step, ": ", answer.status().message()));
  }
  absl::StatusOr<AgreementRoundResponse> response = DecodeAgreementRoundResponse(answer->payload);
  if (!response.ok()) co_return response.status();
  co_return response->any;
}

Task<void> SendAbandon(std::shared_ptr<ServiceWorkerAgreement::Impl> impl, std::string payload) {
  // The answer carries nothing; a dispatcher gone already has nobody left to tell.
  (void)co_await impl->client->Call(FrameKind::kAgreementAbandon, std::move(payload));
}

}  // namespace

absl::StatusOr<std::shared_ptr<ServiceWorkerAgreement>> ServiceWorkerAgreement::Connect(
    const std::string& dispatcher_address, std::string name, int num_workers) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ServiceWorkerAgreement: num_workers ", num_workers));
  }
  absl::StatusOr<HostPort> address = ParseHostPort(dispatcher_address);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address->host, address->port);
  if (!client.ok()) return client.status();
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->num_workers = num_workers;
  impl->dispatcher = dispatcher_address;
  impl->client = std::move(*client);
  return std::shared_ptr<ServiceWorkerAgreement>(new ServiceWorkerAgreement(std::move(impl)));
}

ServiceWorkerAgreement::ServiceWorkerAgreement(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ServiceWorkerAgreement::~ServiceWorkerAgreement() { impl_->abandons.JoinBlocking(); }

int64_t ServiceWorkerAgreement::BeginEpoch(int worker) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->epochs[worker]++;
}

Task<absl::StatusOr<bool>> ServiceWorkerAgreement::AnyWorkerHasData(int worker, int64_t epoch, int64_t step,
                                                                    bool mine) {
  if (worker < 0 || worker >= impl_->num_workers || epoch < 0 || step < 0) {
    return [](std::string why) -> Task<absl::StatusOr<bool>> {
      co_return absl::InvalidArgumentError(why);
    }(absl::StrCat("ServiceWorkerAgreement: worker ", worker, " of ", impl_->num_workers, ", epoch ", epoch,
                               ", step ", step));
  }
  AgreementRoundRequest request{impl_->name,
                                static_cast<uint32_t>(impl_->num_workers),
                                static_cast<uint32_t>(worker),
                                static_cast<uint64_t>(epoch),
                                static_cast<uint64_t>(step),
                                mine};
  return Round(impl_, std::move(request));
}

void ServiceWorkerAgreement::Abandon(int worker, int64_t epoch) {
  if (worker < 0 || worker >= impl_->num_workers || epoch < 0) return;
  AgreementAbandonRequest request{impl_->name, static_cast<uint32_t>(impl_->num_workers),
                                  static_cast<uint32_t>(worker), static_cast<uint64_t>(epoch)};
  impl_->abandons.Spawn(SendAbandon(impl_, EncodeAgreementAbandonRequest(request)));
}

}  // namespace sluice::service
