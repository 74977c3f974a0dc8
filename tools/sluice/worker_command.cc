#include "tools/sluice/worker_command.h"

#include <memory>

#include "distribute/service/run_until_signal.h"
#include "sluice/distribute/service.h"

namespace sluice::tools {

CLI::App* AddWorkerCommand(CLI::App& app, WorkerFlags* flags) {
  CLI::App* cmd = app.add_subcommand("worker", "run a data-service worker until SIGTERM or SIGINT");
  cmd->add_option("--dispatcher", flags->dispatcher, "the dispatcher's address")
      ->type_name("HOST:PORT")
      ->required();
  cmd->add_option("--port", flags->port, "the port to listen on; 0 takes a free one")->capture_default_str();
  cmd->add_option("--host", flags->host, "the address to listen on, which clients are given")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "the pool all of the worker's pipelines run on")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--dispatcher-timeout-ms", flags->dispatcher_timeout_ms,
                  "a lost dispatcher is reconnected to; after this long, tasks waiting for a split fail")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->footer(
      "Prints 'listening on HOST:PORT', then one line per event on stderr.\n"
      "exit status: 0 stopped by a signal; 1 cannot listen or reach the dispatcher; 2 bad usage.");
  return cmd;
}

int RunWorker(const WorkerFlags& flags, std::ostream& out, std::ostream& err) {
  service::TerminationSignals signals;  // before the worker's threads start, so they inherit the mask
  service::WorkerConfig config;
  config.dispatcher_address = flags.dispatcher;
  config.host = flags.host;
  config.port = flags.port;
  config.threads = flags.threads;
  config.dispatcher_timeout_ms = flags.dispatcher_timeout_ms;
  config.log = [&err](const std::string& line) { err << "worker: " << line << std::endl; };
  absl::StatusOr<std::unique_ptr<service::WorkerServer>> worker = service::WorkerServer::Start(config);
  if (!worker.ok()) {
    err << "sluice worker: " << worker.status().message() << "\n";
    return 1;
  }
  out << "listening on " << (*worker)->address() << std::endl;
  const int signal = signals.Wait();
  err << "worker: signal " << signal << ", stopping" << std::endl;
  (*worker)->Stop();
  return 0;
}

}  // namespace sluice::tools
