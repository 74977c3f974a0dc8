// `sluice bench service`: the data service on loopback. One in-process dispatcher and one worker
// (WorkerServer, 2 threads) serve this process's client over TCP on 127.0.0.1, so every element crosses
// a real socket: encoded by the worker, framed, sent, decoded by the client.
// Cases:
// - "1 MiB elements": payload GB/s of a worker pipeline FromVector({1 MiB string}).Repeat(n) read through
//   Distribute(parallel_epochs), vs iperf3's single TCP stream over loopback moving the same bytes, at
//   least 64 MiB (`iperf3 -c 127.0.0.1 -n BYTES`, receiver's rate).
// - "100 B elements": elements/s of the same pipeline with 100-byte strings through the service, vs the
//   pipeline run locally (no service): the service's per-element cost. The service side also reports its
//   Next() latency p50 and p99 (every call, in µs).
// --size: 1 MiB elements per run (default 2048, i.e. 2 GiB); the 100 B case moves 256x as many elements.
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sluice/dataset.h"
#include "sluice/distribute/service.h"
#include "tools/sluice/bench_process.h"
#include "tools/sluice/bench_scenarios.h"
#include "tools/sluice/bench_stats.h"

extern char** environ;

namespace sluice::tools {
namespace {

constexpr int64_t kDefaultLargeElements = 2048;
constexpr int64_t kLargeBytes = int64_t{1} << 20;
constexpr int64_t kSmallBytes = 100;
constexpr int64_t kSmallPerLarge = 256;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A dispatcher and one worker for the whole scenario; each run is a job of its own.
struct LoopbackService {
  std::unique_ptr<service::DispatcherServer> dispatcher;
  std::unique_ptr<service::WorkerServer> worker;

  static absl::StatusOr<LoopbackService> Start() {
    LoopbackService s;
    absl::StatusOr<std::unique_ptr<service::DispatcherServer>> dispatcher =
        service::DispatcherServer::Start({});
    if (!dispatcher.ok()) return dispatcher.status();
    s.dispatcher = std::move(*dispatcher);
    service::WorkerConfig config;
    config.dispatcher_address = s.dispatcher->address();
    absl::StatusOr<std::unique_ptr<service::WorkerServer>> worker = service::WorkerServer::Start(config);
    if (!worker.ok()) return worker.status();
    s.worker = std::move(*worker);
    return s;
  }
  service::ServiceOptions Options() const {
    service::ServiceOptions options;
    options.processing_mode = service::ProcessingMode::kParallelEpochs;
    options.dispatcher_address = dispatcher->address();
    return options;
  }
};

Dataset<std::string> Payloads(int64_t bytes, int64_t count) {
  return FromVector<std::string>({std::string(static_cast<size_t>(bytes), 'x')}).Repeat(count);
}

// Reads `dataset` to its end; fails unless exactly `count` elements of `bytes` arrived. With `latencies`,
// the time of every Next() in µs.
absl::StatusOr<double> Drain(const Dataset<std::string>& dataset, int64_t count, int64_t bytes,
                             std::vector<double>* latencies) {
  if (latencies != nullptr) latencies->reserve(static_cast<size_t>(count) + 1);
  const auto start = std::chrono::steady_clock::now();
  int64_t received = 0;
  Iterator<std::string> it = dataset.MakeIterator();
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    auto next = it.NextBlocking();
    if (latencies != nullptr) latencies->push_back(SecondsSince(t0) * 1e6);
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    if (static_cast<int64_t>((*next)->size()) != bytes) {
      return absl::InternalError(absl::StrCat("an element of ", (*next)->size(), " bytes, expected ", bytes));
    }
    ++received;
  }
  const double seconds = SecondsSince(start);
  if (received != count)
    return absl::InternalError(absl::StrCat("received ", received, " elements of ", count));
  return seconds;
}

absl::StatusOr<Sample> ServiceLarge(const LoopbackService& service, int64_t count) {
  absl::StatusOr<double> seconds =
      Drain(Payloads(kLargeBytes, count).Distribute(service.Options()), count, kLargeBytes, nullptr);
  if (!seconds.ok()) return seconds.status();
  return Sample{.value = static_cast<double>(count * kLargeBytes) / *seconds / 1e9, .extra = {}};
}

absl::StatusOr<Sample> Small(const LoopbackService* service, int64_t count) {
  std::vector<double> latencies;
  Dataset<std::string> dataset = Payloads(kSmallBytes, count);
  if (service != nullptr) dataset = dataset.Distribute(service->Options());
  absl::StatusOr<double> seconds =
      Drain(dataset, count, kSmallBytes, service != nullptr ? &latencies : nullptr);
  if (!seconds.ok()) return seconds.status();
  Sample sample{.value = static_cast<double>(count) / *seconds, .extra = {}};
  if (service != nullptr) {
    std::sort(latencies.begin(), latencies.end());
    sample.extra["next_p50_us"] = Percentile(latencies, 0.50);
    sample.extra["next_p99_us"] = Percentile(latencies, 0.99);
  }
  return sample;
}

// A loopback port free right now (the kernel's choice; iperf3 binds it a moment later).
absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::ErrnoToStatus(err, "bind 127.0.0.1:0");
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

// `iperf3 -s -1` (one test, then exit) in the background, its output discarded.
absl::StatusOr<pid_t> SpawnIperfServer(const std::string& iperf3, int port) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {iperf3, "-s", "-1", "-B", "127.0.0.1", "-p", absl::StrCat(port)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, iperf3.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return absl::ErrnoToStatus(rc, absl::StrCat("cannot start ", iperf3));
  return pid;
}

// Waits for `pid` at most `seconds`, then kills it.
void ReapWithin(pid_t pid, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (SecondsSince(start) < seconds) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// iperf3 reports a receiver rate of 0 for a transfer that ends before its first interval is recorded
// (seen under load with a few MiB), so it moves at least kIperfMinBytes: a rate needs no equal byte count.
constexpr int64_t kIperfMinBytes = int64_t{64} << 20;

// iperf3 -J reports a refused connection as {"error": ...} and may still exit 0.
bool IperfSucceeded(const absl::StatusOr<ProcessResult>& client) {
  return client.ok() && client->exit_code == 0 && client->out.find("\"error\"") == std::string::npos;
}

absl::StatusOr<Sample> Iperf3Once(const std::string& iperf3, int64_t bytes) {
  absl::StatusOr<ProcessResult> client = absl::UnavailableError("iperf3 server did not start");
  // The port is free when chosen, not when iperf3 binds it: another process can take it meanwhile, and
  // the server then exits at once. So a server that died is started again on another port (bounded:
  // 3 servers), and a live one gets a moment to listen (bounded: 50 tries).
  for (int server_run = 0; server_run < 3; ++server_run) {
    absl::StatusOr<int> port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    absl::StatusOr<pid_t> server = SpawnIperfServer(iperf3, *port);
    if (!server.ok()) return server.status();
    bool server_exited = false;
    for (int attempt = 0; attempt < 50; ++attempt) {
      client =
          RunProcess({iperf3, "-c", "127.0.0.1", "-p", absl::StrCat(*port), "-n", absl::StrCat(bytes), "-J"},
                     {.timeout_seconds = 120, .sample_ms = 200});
      if (IperfSucceeded(client)) break;
      if (::waitpid(*server, nullptr, WNOHANG) == *server) {
        server_exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!server_exited) ReapWithin(*server, 5);
    if (IperfSucceeded(client)) break;
  }
  if (!client.ok()) return client.status();
  if (client->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("iperf3 exited ", client->exit_code, ": ", client->out.substr(0, 300)));
  }
  nlohmann::json report = nlohmann::json::parse(client->out, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.contains("end") || !report["end"].contains("sum_received") ||
      !report["end"]["sum_received"].contains("bits_per_second")) {
    return absl::InternalError(absl::StrCat("cannot read iperf3's rate from: ", client->out.substr(0, 300)));
  }
  const double bits_per_second = report["end"]["sum_received"]["bits_per_second"].get<double>();
  return Sample{.value = bits_per_second / 8 / 1e9, .extra = {}};
}

// A zero rate is never a sample: try again, then fail naming it (bounded: 3 runs).
absl::StatusOr<Sample> Iperf3(const std::string& iperf3, int64_t bytes) {
  for (int run = 0; run < 3; ++run) {
    absl::StatusOr<Sample> sample = Iperf3Once(iperf3, std::max(bytes, kIperfMinBytes));
    if (!sample.ok() || sample->value > 0) return sample;
  }
  return absl::InternalError("iperf3 reported a receiver rate of 0 in 3 runs");
}

absl::StatusOr<ScenarioResult> RunService(const BenchConfig& config) {
  absl::StatusOr<std::string> iperf3 =
      FindTool("iperf3", config.path, "scripts/install-deps (apt-get install iperf3)");
  if (!iperf3.ok()) return absl::FailedPreconditionError(iperf3.status().message());
  const int64_t large = config.size.value_or(kDefaultLargeElements);
  const int64_t small = large * kSmallPerLarge;
  absl::StatusOr<LoopbackService> service = LoopbackService::Start();
  if (!service.ok()) return service.status();

  ScenarioResult result;
  result.scenario = "service";
  result.parameters.emplace_back("1 MiB elements", absl::StrCat(large));
  result.parameters.emplace_back("100 B elements", absl::StrCat(small));
  result.parameters.emplace_back("worker threads", "2");
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));

  CaseResult bulk;
  bulk.name = "1 MiB elements";
  bulk.metric = "GB/s";
  bulk.note = "payload bytes through the service vs iperf3's single TCP stream, both on 127.0.0.1";
  absl::Status s = RunAlternating(config,
                                  {{"sluice", [&] { return ServiceLarge(*service, large); }},
                                   {"iperf3", [&] { return Iperf3(*iperf3, large * kLargeBytes); }}},
                                  &bulk);
  if (!s.ok()) return s;
  result.cases.push_back(std::move(bulk));

  CaseResult tiny;
  tiny.name = "100 B elements";
  tiny.metric = "elements/s";
  tiny.note = "through the service vs the same pipeline in this process; sluice's Next() p50/p99 in µs";
  s = RunAlternating(
      config,
      {{"sluice", [&] { return Small(&*service, small); }}, {"local", [&] { return Small(nullptr, small); }}},
      &tiny);
  if (!s.ok()) return s;
  result.cases.push_back(std::move(tiny));
  service->worker->Stop();
  service->dispatcher->Stop();
  return result;
}

}  // namespace

Scenario ServiceScenario() {
  Scenario s;
  s.name = "service";
  s.description = "data service on loopback: 1 MiB elements vs iperf3, 100 B elements/s and Next() p50/p99";
  s.size_unit = "1 MiB elements";
  s.default_size = kDefaultLargeElements;
  s.run = RunService;
  return s;
}

}  // namespace sluice::tools
