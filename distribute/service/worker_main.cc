// sluice::service::WorkerMain: the worker as a program in a user's own binary
// (sluice/distribute/service.h).
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distribute/service/run_until_signal.h"
#include "sluice/distribute/service.h"

namespace sluice::service {

int WorkerMain(int argc, char** argv) {
  WorkerConfig config;
  const std::string program = argc > 0 ? argv[0] : "worker";
  auto usage = [&](const std::string& why) {
    std::cerr << program << ": " << why << "\nusage: " << program
              << " --dispatcher HOST:PORT [--port P] [--threads N] [--host H] [--dispatcher-timeout-ms MS]\n";
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout
          << "usage: " << program
          << " --dispatcher HOST:PORT [--port P] [--threads N] [--host H] [--dispatcher-timeout-ms MS]\n";
      return 0;
    }
    if (i + 1 >= argc) return usage(absl::StrCat(flag, " needs a value"));
    const std::string value = argv[++i];
    uint32_t number = 0;
    if (flag == "--dispatcher") {
      config.dispatcher_address = value;
    } else if (flag == "--host") {
      config.host = value;
    } else if (flag == "--port") {
      if (!absl::SimpleAtoi(value, &number) || number > 65535) return usage("--port: not a port: " + value);
      config.port = static_cast<uint16_t>(number);
    } else if (flag == "--threads") {
      if (!absl::SimpleAtoi(value, &number) || number == 0 || number > 1024) {
        return usage("--threads: not a thread count: " + value);
      }
      config.threads = static_cast<int>(number);
    } else if (flag == "--dispatcher-timeout-ms") {
      if (!absl::SimpleAtoi(value, &config.dispatcher_timeout_ms) || config.dispatcher_timeout_ms <= 0) {
        return usage("--dispatcher-timeout-ms: not a positive number of milliseconds: " + value);
      }
    } else {
      return usage(absl::StrCat("unknown flag ", flag));
    }
  }
  if (config.dispatcher_address.empty()) return usage("--dispatcher is required");
  config.log = [](const std::string& line) { std::cerr << "worker: " << line << std::endl; };
  TerminationSignals signals;  // before any thread starts
  absl::StatusOr<std::unique_ptr<WorkerServer>> worker = WorkerServer::Start(config);
  if (!worker.ok()) {
    std::cerr << program << ": " << worker.status().message() << "\n";
    return 1;
  }
  std::cout << "listening on " << (*worker)->address() << std::endl;
  const int signal = signals.Wait();
  std::cerr << "worker: signal " << signal << ", stopping" << std::endl;
  (*worker)->Stop();
  return 0;
}

}  // namespace sluice::service
