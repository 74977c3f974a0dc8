#include "tools/sluice/dispatcher_command.h"

#include <memory>

#include "distribute/service/run_until_signal.h"
#include "sluice/distribute/service.h"

namespace sluice::tools {

CLI::App* AddDispatcherCommand(CLI::App& app, DispatcherFlags* flags) {
  CLI::App* cmd = app.add_subcommand("dispatcher", "run a data-service dispatcher until SIGTERM or SIGINT");
  cmd->add_option("--port", flags->port, "the port to listen on; 0 takes a free one")->capture_default_str();
  cmd->add_option("--host", flags->host, "the address to listen on")->capture_default_str();
  cmd->add_option("--worker-timeout-ms", flags->worker_timeout_ms,
                  "a worker silent this long is dropped and its unfinished tasks end")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--client-timeout-ms", flags->client_timeout_ms,
                  "a consumer silent this long has left; an unfinished iteration without consumers is "
                  "cancelled")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--work-dir", flags->work_dir,
                  "journal jobs, tasks, splits and workers here; restarted on the same folder and port, "
                  "the dispatcher continues them (workers and consumers reconnect)")
      ->type_name("DIR");
  cmd->footer(
      "Prints 'listening on HOST:PORT', then one line per event on stderr.\n"
      "exit status: 0 stopped by a signal; 1 cannot listen; 2 bad usage.");
  return cmd;
}

int RunDispatcher(const DispatcherFlags& flags, std::ostream& out, std::ostream& err) {
  service::TerminationSignals signals;  // before the server's threads start, so they inherit the mask
  service::DispatcherConfig config;
  config.host = flags.host;
  config.port = flags.port;
  config.worker_timeout_ms = flags.worker_timeout_ms;
  config.client_timeout_ms = flags.client_timeout_ms;
  config.work_dir = flags.work_dir;
  config.log = [&err](const std::string& line) { err << "dispatcher: " << line << std::endl; };
  absl::StatusOr<std::unique_ptr<service::DispatcherServer>> server =
      service::DispatcherServer::Start(config);
  if (!server.ok()) {
    err << "sluice dispatcher: " << server.status().message() << "\n";
    return 1;
  }
  out << "listening on " << (*server)->address() << std::endl;
  const int signal = signals.Wait();
  err << "dispatcher: signal " << signal << ", stopping" << std::endl;
  (*server)->Stop();
  err << "dispatcher: stopped" << std::endl;
  return 0;
}

}  // namespace sluice::tools
