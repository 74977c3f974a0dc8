// Internal: the dispatcher's multi-worker agreements (sluice::WorkerAgreement served over the network,
// for trainers in separate processes; the client side is ServiceWorkerAgreement in
// sluice/distribute/service.h).
//
// Contract:
// - An agreement is named by its trainers and made at its first request, for the worker count that
//   request gives; a request with another count, or a worker index outside it, is InvalidArgument.
// - Round answers once every worker arrived for (epoch, step), as InProcessWorkerAgreement does (it is
//   one, per name), and fails with Cancelled when a worker abandoned the epoch. It does not hold a thread
//   while it waits; the server's stop cancels it.
// - Agreements live as long as the dispatcher (a few words each; trainers name one per job).
// - Threading: thread-safe.
#ifndef SLUICE_DISTRIBUTE_SERVICE_AGREEMENT_REGISTRY_H_
#define SLUICE_DISTRIBUTE_SERVICE_AGREEMENT_REGISTRY_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "distribute/service/messages.h"
#include "sluice/distribute/auto_shard.h"
#include "sluice/engine/task.h"

namespace sluice::service {

class AgreementRegistry {
 public:
  Task<absl::StatusOr<std::string>> Round(AgreementRoundRequest request);
  absl::StatusOr<std::string> Abandon(const AgreementAbandonRequest& request);

 private:
  absl::StatusOr<std::shared_ptr<InProcessWorkerAgreement>> Find(const std::string& name,
                                                                 uint32_t num_workers, uint32_t worker);

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<InProcessWorkerAgreement>> agreements_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_AGREEMENT_REGISTRY_H_
