// The data-service example's own function and the two sides that use it (see main.cc).
//
// kScaledSquare is a user function: registered in functions.cc, so that this program's workers can
// rebuild the pipeline part before Distribute(...). The stock `sluice worker` does not know it and fails
// the job naming it; `data_service worker` (WorkerMain in this binary) does.
#ifndef SLUICE_EXAMPLES_DATA_SERVICE_FUNCTIONS_H_
#define SLUICE_EXAMPLES_DATA_SERVICE_FUNCTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/function_registry.h"

namespace data_service_example {

// x -> scale * x * x; argument "scale" (integer, default 1).
inline constexpr sluice::Function<int64_t(int64_t)> kScaledSquare{"data_service_example.scaled_square"};

// Registers kScaledSquare, once. Every entry point below calls it.
void EnsureExampleRegistrations();

struct ClientConfig {
  std::string dispatcher;  // "host:port"
  sluice::service::ProcessingMode mode = sluice::service::ProcessingMode::kDistributedEpoch;
  std::string job_name;
  int64_t elements = 5;
  int64_t scale = 1;
};

// The trainer side: Range(elements).Map(kScaledSquare) runs on the workers, `+ 1` here. Returns the
// elements in arrival order (one worker in distributed_epoch mode: Range's order).
absl::StatusOr<std::vector<int64_t>> RunClient(const ClientConfig& config);

// Everything in one process: a dispatcher, `workers` workers (embeddable servers on 127.0.0.1) and the
// client; `log` receives the servers' event lines.
absl::StatusOr<std::vector<int64_t>> RunInProcess(ClientConfig config, int workers,
                                                  const std::function<void(const std::string&)>& log);

}  // namespace data_service_example

#endif  // SLUICE_EXAMPLES_DATA_SERVICE_FUNCTIONS_H_
