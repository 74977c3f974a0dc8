#include "distribute/service/agreement_registry.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice::service {

absl::StatusOr<std::shared_ptr<InProcessWorkerAgreement>> AgreementRegistry::Find(const std::string& name,
                                                                                  uint32_t num_workers,
                                                                                  uint32_t worker) {
  if (num_workers == 0 || worker >= num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("agreement '", name, "': worker ", worker, " of ", num_workers));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, made] = agreements_.try_emplace(name);
  if (made) it->second = std::make_shared<InProcessWorkerAgreement>(static_cast<int>(num_workers));
  if (it->second->num_workers() != static_cast<int>(num_workers)) {
    return absl::InvalidArgumentError(absl::StrCat("agreement '", name, "' is among ",
                                                   it->second->num_workers(), " workers; this trainer says ",
                                                   num_workers));
  }
  return it->second;
}

Task<absl::StatusOr<std::string>> AgreementRegistry::Round(AgreementRoundRequest request) {
  absl::StatusOr<std::shared_ptr<InProcessWorkerAgreement>> agreement =
      Find(request.agreement, request.num_workers, request.worker);
  if (!agreement.ok()) co_return agreement.status();
  absl::StatusOr<bool> any =
      co_await (*agreement)
          ->AnyWorkerHasData(static_cast<int>(request.worker), static_cast<int64_t>(request.epoch),
                             static_cast<int64_t>(request.step), request.mine);
  if (!any.ok()) co_return any.status();
  co_return EncodeAgreementRoundResponse({*any});
}

absl::StatusOr<std::string> AgreementRegistry::Abandon(const AgreementAbandonRequest& request) {
  absl::StatusOr<std::shared_ptr<InProcessWorkerAgreement>> agreement =
      Find(request.agreement, request.num_workers, request.worker);
  if (!agreement.ok()) return agreement.status();
  (*agreement)->Abandon(static_cast<int>(request.worker), static_cast<int64_t>(request.epoch));
  return std::string();
}

}  // namespace sluice::service
