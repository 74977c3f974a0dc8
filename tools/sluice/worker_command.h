// `sluice worker --dispatcher HOST:PORT [--port P] [--threads N] [--host H]`: a data-service worker
// (docs/service.md) as a process. It rebuilds pipelines of the standard ops over the built-in types and
// the library's registered functions; a pipeline needing other registrations fails its job naming them
// (a user's own binary runs sluice::service::WorkerMain instead).
//
// Prints one line "listening on HOST:PORT" (port 0 takes a free port) on `out`, then one line per notable
// event on `err` (registered, task started, finished or failed), and runs until SIGTERM or SIGINT, when it
// stops its tasks and its server (clients connected or not) and exits 0. Exit 1 when it cannot listen or
// reach the dispatcher.
#ifndef SLUICE_TOOLS_SLUICE_WORKER_COMMAND_H_
#define SLUICE_TOOLS_SLUICE_WORKER_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace sluice::tools {

struct WorkerFlags {
  std::string dispatcher;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int threads = 2;
  int64_t dispatcher_timeout_ms = 60000;
};

CLI::App* AddWorkerCommand(CLI::App& app, WorkerFlags* flags);
int RunWorker(const WorkerFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_WORKER_COMMAND_H_
