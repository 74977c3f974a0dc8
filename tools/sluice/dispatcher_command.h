// `sluice dispatcher [--port P] [--host H]`: the data service's dispatcher (docs/service.md) as a process.
//
// Prints one line "listening on HOST:PORT" (port 0 takes a free port) on `out`, then one line per notable
// event on `err` (worker joined or left, job created, iteration finished or failed), and runs until
// SIGTERM or SIGINT, when it stops serving (clients connected or not) and exits 0. Exit 1 when it cannot
// listen.
#ifndef SLUICE_TOOLS_SLUICE_DISPATCHER_COMMAND_H_
#define SLUICE_TOOLS_SLUICE_DISPATCHER_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace sluice::tools {

struct DispatcherFlags {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int64_t worker_timeout_ms = 10000;
  int64_t client_timeout_ms = 60000;
  std::string work_dir;
};

CLI::App* AddDispatcherCommand(CLI::App& app, DispatcherFlags* flags);
int RunDispatcher(const DispatcherFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_DISPATCHER_COMMAND_H_
