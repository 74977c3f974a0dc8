// Helpers for the data-service tests: an in-process dispatcher and workers on loopback (free ports), and
// draining a dataset with every wait bounded in time (a watchdog stops it) and in count.
#ifndef SLUICE_TESTS_DISTRIBUTE_SERVICE_SERVICE_TEST_UTIL_H_
#define SLUICE_TESTS_DISTRIBUTE_SERVICE_SERVICE_TEST_UTIL_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/distribute/service.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/ops/dataset.h"

namespace sluice::service::testing {

// Generous: only a hung test waits this long.
inline constexpr auto kPatience = std::chrono::seconds(30);

struct Cluster {
  std::unique_ptr<DispatcherServer> dispatcher;
  std::vector<std::unique_ptr<WorkerServer>> workers;

  Cluster() = default;
  Cluster(Cluster&&) = default;
  Cluster& operator=(Cluster&&) = default;

  // A dispatcher and `num_workers` workers, all registered before it returns.
  static Cluster Start(int num_workers, WorkerConfig worker_config = {}) {
    Cluster cluster;
    absl::StatusOr<std::unique_ptr<DispatcherServer>> dispatcher = DispatcherServer::Start({});
    EXPECT_TRUE(dispatcher.ok()) << dispatcher.status();
    if (!dispatcher.ok()) return cluster;
    cluster.dispatcher = std::move(*dispatcher);
    for (int i = 0; i < num_workers; ++i) cluster.AddWorker(worker_config);
    return cluster;
  }

  void AddWorker(WorkerConfig config = {}) {
    config.dispatcher_address = dispatcher->address();
    config.heartbeat_interval_ms = 10;  // tasks reach workers quickly; nothing asserts on time
    absl::StatusOr<std::unique_ptr<WorkerServer>> worker = WorkerServer::Start(config);
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (worker.ok()) workers.push_back(std::move(*worker));
  }

  ServiceOptions Options(ProcessingMode mode, std::string job_name = "") const {
    ServiceOptions options;
    options.processing_mode = mode;
    options.dispatcher_address = dispatcher->address();
    options.job_name = std::move(job_name);
    options.dispatcher_timeout_ms = 500;  // tests that stop the dispatcher see their consumers fail soon
    return options;
  }

  ~Cluster() {
    for (auto& worker : workers) worker->Stop();
    if (dispatcher) dispatcher->Stop();
  }
};

// Lines a server logs, from its threads.
class LogLines {
 public:
  std::function<void(const std::string&)> Sink() const {
    return [state = state_](const std::string& line) {
      std::lock_guard<std::mutex> lock(state->mu);
      state->lines.push_back(line);
    };
  }
  int Count(const std::string& text) const {
    std::lock_guard<std::mutex> lock(state_->mu);
    int n = 0;
    for (const std::string& line : state_->lines) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  // Everything logged, one line each, for failure messages.
  std::string Text() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::string text;
    for (const std::string& line : state_->lines) text += line + "\n";
    return text;
  }
  // Waits (bounded by kPatience) until `text` was logged `n` times.

  bool WaitFor(const std::string& text, int n) const {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (Count(text) < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

 private:
  struct State {
    mutable std::mutex mu;
    std::vector<std::string> lines;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

template <class T>
struct Drained {
  std::vector<T> values;
  std::vector<absl::Status> errors;
  bool ended = false;  // reached the end (not stopped by the watchdog or the count)
};

namespace detail {
// `it` outlives the task: SyncWait awaits it in the same statement.
template <class T>
Task<absl::StatusOr<std::optional<T>>> NextOf(Iterator<T>* it) {
  absl::StatusOr<std::optional<T>> next = co_await it->Next();
  co_return next;
}
}  // namespace detail

// Pulls from `it` until the end, at most `max_items` values and errors, each
// wait bounded by kPatience.
template <class T>
Drained<T> DrainIterator(Iterator<T>& it, size_t max_items = 100000) {
  Drained<T> out;
  std::stop_source stop;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kPatience, [&] { return done; })) stop.request_stop();
  });
  while (out.values.size() + out.errors.size() < max_items && !stop.stop_requested()) {
    absl::StatusOr<std::optional<T>> next = SyncWait(detail::NextOf(&it), stop.get_token());
    if (!next.ok()) {
      out.errors.push_back(next.status());
      continue;
    }
    if (!next->has_value()) {
      out.ended = true;
      break;
    }
    out.values.push_back(std::move(**next));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
  return out;
}

// Whether `first` then `second` hold 0..n-1 each exactly once, in any order.
inline ::testing::AssertionResult EachOfRangeOnce(std::vector<int64_t> first,
                                                  const std::vector<int64_t>& second, int64_t n) {
  first.insert(first.end(), second.begin(), second.end());
  std::sort(first.begin(), first.end());
  if (first.size() != static_cast<size_t>(n)) {
    return ::testing::AssertionFailure() << first.size() << " elements, not " << n;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (first[static_cast<size_t>(i)] != i) {
      return ::testing::AssertionFailure()
             << "sorted element " << i << " is " << first[static_cast<size_t>(i)];
    }
  }
  return ::testing::AssertionSuccess();
}

template <class T>
Drained<T> Drain(const Dataset<T>& dataset, size_t max_items = 100000) {
  Iterator<T> it = dataset.MakeIterator();
  return DrainIterator(it, max_items);
}

}  // namespace sluice::service::testing

#endif  // SLUICE_TESTS_DISTRIBUTE_SERVICE_SERVICE_TEST_UTIL_H_
