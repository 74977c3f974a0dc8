#include "functions.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "sluice/dataset.h"
#include "sluice/ops/registration.h"

namespace data_service_example {
namespace {

bool Register() {
  sluice::registration_detail::RegisterFunctionAtStartup(
      kScaledSquare, [](const sluice::FunctionArgs& args) -> absl::StatusOr<std::function<int64_t(int64_t)>> {
        absl::StatusOr<int64_t> scale = args.GetOr<int64_t>("scale", 1);
        if (!scale.ok()) return scale.status();
        return [scale = *scale](int64_t x) { return scale * x * x; };
      });
  return true;
}

}  // namespace

// Called, not a static initialiser: this file is in a static library that the linker would drop.
void EnsureExampleRegistrations() {
  static const bool registered = Register();
  (void)registered;
}

absl::StatusOr<std::vector<int64_t>> RunClient(const ClientConfig& config) {
  EnsureExampleRegistrations();
  sluice::service::ServiceOptions options;
  options.processing_mode = config.mode;
  options.dispatcher_address = config.dispatcher;
  options.job_name = config.job_name;
  sluice::Dataset<int64_t> ds = sluice::Range(config.elements)
                                    .Map(kScaledSquare.With({{"scale", config.scale}}))  // on the workers
                                    .Distribute(options)
                                    .Map([](int64_t x) { return x + 1; }, "plus_one");  // here
  std::vector<int64_t> out;
  sluice::Iterator<int64_t> it = ds.MakeIterator();
  while (true) {
    absl::StatusOr<std::optional<int64_t>> next = it.NextBlocking();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    out.push_back(**next);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> RunInProcess(ClientConfig config, int workers,
                                                  const std::function<void(const std::string&)>& log) {
  EnsureExampleRegistrations();
  sluice::service::DispatcherConfig dispatcher_config;
  dispatcher_config.log = log;
  absl::StatusOr<std::unique_ptr<sluice::service::DispatcherServer>> dispatcher =
      sluice::service::DispatcherServer::Start(dispatcher_config);
  if (!dispatcher.ok()) return dispatcher.status();
  std::vector<std::unique_ptr<sluice::service::WorkerServer>> servers;
  for (int i = 0; i < workers; ++i) {
    sluice::service::WorkerConfig worker_config;
    worker_config.dispatcher_address = (*dispatcher)->address();
    worker_config.log = log;
    absl::StatusOr<std::unique_ptr<sluice::service::WorkerServer>> worker =
        sluice::service::WorkerServer::Start(worker_config);
    if (!worker.ok()) return worker.status();
    servers.push_back(*std::move(worker));
  }
  config.dispatcher = (*dispatcher)->address();
  absl::StatusOr<std::vector<int64_t>> result = RunClient(config);
  for (auto& server : servers) server->Stop();
  (*dispatcher)->Stop();
  return result;
}

}  // namespace data_service_example
