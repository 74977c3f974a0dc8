// data_service: the data service with a user function (functions.h), as three commands of one binary.
//
//   build/bin/data_service local                        # dispatcher, 2 workers and the client in one process
//   build/bin/sluice dispatcher --port 5050 &           # or as separate processes:
//   build/bin/data_service worker --dispatcher 127.0.0.1:5050 &   # this binary's worker: knows the function
//   build/bin/data_service client --dispatcher 127.0.0.1:5050     # prints 1 2 5 10 17
//
// `sluice worker` (the stock worker) fails such a job naming data_service_example.scaled_square: a worker
// rebuilds the pipeline from its graph and needs every registration the pipeline names.
// Exit status: 0 done, 1 failed (message on stderr), 2 bad usage.
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "functions.h"
#include "sluice/distribute/service.h"

namespace {

void Print(const std::vector<int64_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) std::cout << (i == 0 ? "" : " ") << values[i];
  std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  // The worker takes WorkerMain's own flags: hand it everything after "worker".
  if (argc >= 2 && std::string(argv[1]) == "worker") {
    data_service_example::EnsureExampleRegistrations();
    return sluice::service::WorkerMain(argc - 1, argv + 1);
  }

  CLI::App app(
      "The sluice data service with a user function: Range(N).Map(scaled_square) on the workers, +1 here.",
      "data_service");
  app.require_subcommand(1);
  data_service_example::ClientConfig config;
  std::string mode = "distributed_epoch";
  int workers = 2;
  auto add_client_options = [&](CLI::App* command) {
    command->add_option("--mode", mode, "parallel_epochs or distributed_epoch")
        ->capture_default_str()
        ->check(CLI::IsMember({"parallel_epochs", "distributed_epoch"}));
    command->add_option("--elements", config.elements, "Range(N)")->type_name("N")->capture_default_str();
    command->add_option("--scale", config.scale, "the function's argument")
        ->type_name("K")
        ->capture_default_str();
    command->add_option("--job-name", config.job_name, "share a job with other clients")->type_name("NAME");
  };
  CLI::App* client = app.add_subcommand("client", "read from a running dispatcher");
  client->add_option("--dispatcher", config.dispatcher, "HOST:PORT")->required();
  add_client_options(client);
  CLI::App* local = app.add_subcommand("local", "run a dispatcher, workers and the client in this process");
  local->add_option("--workers", workers, "workers to start")->type_name("N")->capture_default_str();
  add_client_options(local);
  app.add_subcommand("worker", "a worker that knows this binary's function (flags: sluice worker's)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "data_service: " << e.what() << "\n";
    return 2;
  }
  config.mode = mode == "parallel_epochs" ? sluice::service::ProcessingMode::kParallelEpochs
                                          : sluice::service::ProcessingMode::kDistributedEpoch;
  absl::StatusOr<std::vector<int64_t>> values =
      local->parsed() ? data_service_example::RunInProcess(
                            config, workers, [](const std::string& line) { std::cerr << line << "\n"; })
                      : data_service_example::RunClient(config);
  if (!values.ok()) {
    std::cerr << "data_service: " << values.status() << "\n";
    return 1;
  }
  Print(*values);
  return 0;
}
