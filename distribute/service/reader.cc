// Distribute's network side: one consumer pass over a job
// (sluice/distribute/service.h).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/service/address.h"
#include "distribute/service/client.h"
#include "distribute/service/dispatcher_link.h"
#include "distribute/service/messages.h"
#include "sluice/distribute/service.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"

namespace sluice::service::detail {
namespace {

constexpr auto kHeartbeatPeriod = std::chrono::milliseconds(200);
constexpr auto kMaxIdleSleep = std::chrono::milliseconds(20);
// How long a reader's goodbye to the dispatcher may hold up its iterator's destruction.
constexpr auto kReleaseTimeout = std::chrono::milliseconds(1000);
constexpr auto kReconnectTimeout = std::chrono::milliseconds(1000);

void SleepFor(std::stop_token stop, std::chrono::milliseconds duration) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, stop, duration, [] { return false; });
}

void RaiseTo(std::atomic<int64_t>& max, int64_t value) {
  int64_t seen = max.load(std::memory_order_relaxed);
  while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

struct ServiceReader::Impl {
  Impl(std::string graph_bytes, std::string type, ServiceOptions service_options, int64_t pass,
       std::shared_ptr<std::atomic<uint64_t>> job, IteratorContextPtr iterator_context)
      : graph(std::move(graph_bytes)),
        element_type(std::move(type)),
        options(std::move(service_options)),
        iteration(pass),
        anonymous_job(std::move(job)),
        context(std::move(iterator_context)),
        ready(false, context->pool != nullptr ? static_cast<Executor*>(context->pool)
                                              : static_cast<Executor*>(&ThreadPool::Default())) {}

  void Run(std::stop_token stop);
  // Pushes what arrived; `reserved` slots were counted as outstanding for it.
  void Deliver(std::deque<absl::StatusOr<std::string>> items, int64_t reserved, bool end);
  void Fail(absl::Status status) {
    std::deque<absl::StatusOr<std::string>> items;
    items.push_back(std::move(status));
    Deliver(std::move(items), 0, true);
  }
  // Reserves up to max_outstanding_requests - outstanding slots (waits for at
  // least one); 0 when stopped, -1 when a heartbeat period passed with no room (the consumer is slow:
  // the dispatcher must still hear from it).
  int64_t Reserve(std::stop_token stop);
  // Tells the dispatcher this consumer is done with the iteration (bounded by kReleaseTimeout).
  void Release(DispatcherLink* dispatcher, uint64_t job_id, uint64_t job_client_id);

  const std::string graph;
  const std::string element_type;
  const ServiceOptions options;
  const int64_t iteration;
  const std::shared_ptr<std::atomic<uint64_t>> anonymous_job;
  const IteratorContextPtr context;

  std::mutex mu;
  std::condition_variable_any space;
  std::deque<absl::StatusOr<std::string>> buffer;
  int64_t outstanding = 0;  // buffered + requested from workers
  bool ended = false;
  AsyncEvent ready;
  std::jthread fetcher;
};

int64_t ServiceReader::Impl::Reserve(std::stop_token stop) {
  const int64_t limit = std::max<int64_t>(1, options.max_outstanding_requests);
  std::unique_lock<std::mutex> lock(mu);
  if (!space.wait_for(lock, stop, kHeartbeatPeriod, [&] { return outstanding < limit; })) {
    return stop.stop_requested() ? 0 : -1;
  }
  const int64_t n = limit - outstanding;
  outstanding += n;
  if (options.stats) RaiseTo(options.stats->max_outstanding, outstanding);
  return n;
}

void ServiceReader::Impl::Deliver(std::deque<absl::StatusOr<std::string>> items, int64_t reserved, bool end) {
  const bool any = !items.empty() || end;
  {
    std::lock_guard<std::mutex> lock(mu);
    outstanding -= reserved - static_cast<int64_t>(items.size());
    for (auto& item : items) buffer.push_back(std::move(item));
    if (end) ended = true;
  }
  if (reserved > 0) space.notify_all();
  if (any) ready.Set();
}

void ServiceReader::Impl::Release(DispatcherLink* dispatcher, uint64_t job_id, uint64_t job_client_id) {
  // The reader's own stop token is usually set by now (its iterator is going), hence CallWithin.
  ClientHeartbeatRequest request{job_id, static_cast<uint64_t>(iteration), job_client_id, /*releasing=*/true};
  absl::StatusOr<Frame> answer = CallWithin(*dispatcher->client(), FrameKind::kClientHeartbeat,
                                            EncodeClientHeartbeatRequest(request), kReleaseTimeout);
  (void)answer;  // best effort: a consumer that cannot say goodbye times out at the dispatcher
}

void ServiceReader::Impl::Run(std::stop_token stop) {
  const std::string where = absl::StrCat("Distribute (dispatcher ", options.dispatcher_address, ")");
  const auto dispatcher_timeout =
      std::chrono::milliseconds(std::max<int64_t>(1, options.dispatcher_timeout_ms));
  ClientOptions dispatcher_options;
  // A reconnect attempt holds up the reading of elements at most this long.
  dispatcher_options.connect_timeout =
      std::min<std::chrono::milliseconds>(dispatcher_timeout, kReconnectTimeout);
  absl::StatusOr<std::unique_ptr<DispatcherLink>> dispatcher =
      DispatcherLink::Connect(options.dispatcher_address, dispatcher_options);
  if (!dispatcher.ok()) {  // a malformed address (InvalidArgument) or no dispatcher there (Unavailable)
    return Fail(
        absl::Status(dispatcher.status().code(), absl::StrCat(where, ": ", dispatcher.status().message())));
  }

  GetOrCreateJobRequest job_request;
  job_request.graph = graph;
  job_request.mode = options.processing_mode;
  job_request.job_name = options.job_name;
  job_request.iteration = static_cast<uint64_t>(iteration);
  if (options.job_name.empty()) job_request.job_id = anonymous_job->load();
  absl::StatusOr<Frame> frame = SyncWait(
      (*dispatcher)->CallOnce(FrameKind::kGetOrCreateJob, EncodeGetOrCreateJobRequest(job_request)), stop);
  absl::StatusOr<GetOrCreateJobResponse> job = frame.ok()
                                                   ? DecodeGetOrCreateJobResponse(frame->payload)
                                                   : absl::StatusOr<GetOrCreateJobResponse>(frame.status());
  if (!job.ok()) {
    if (stop.stop_requested()) return;
    return Fail(absl::Status(job.status().code(), absl::StrCat(where, ": ", job.status().message())));
  }
  if (options.job_name.empty()) anonymous_job->store(job->job_id);
  struct Goodbye {
    Impl* impl;
    DispatcherLink* dispatcher;
    uint64_t job_id;
    uint64_t job_client_id;
    ~Goodbye() { impl->Release(dispatcher, job_id, job_client_id); }
  } goodbye{this, dispatcher->get(), job->job_id, job->job_client_id};

  struct TaskState {
    std::string address;
    bool done = false;
  };
  std::map<uint64_t, TaskState> tasks;
  std::map<std::string, std::unique_ptr<Client>> workers;
  bool finished = false;
  auto last_heartbeat = std::chrono::steady_clock::time_point{};
  bool lost = false;  // the dispatcher is unreachable, since lost_since
  auto lost_since = std::chrono::steady_clock::time_point{};
  auto next_task = tasks.end();
  int empty_answers = 0;  // in a row, across tasks
  auto idle_sleep = std::chrono::milliseconds(1);
  while (!stop.stop_requested()) {
    const bool all_done =
        std::all_of(tasks.begin(), tasks.end(), [](const auto& t) { return t.second.done; });
    if (all_done || std::chrono::steady_clock::now() - last_heartbeat > kHeartbeatPeriod) {
      if (all_done && finished) return Deliver({}, 0, true);
      if (all_done && last_heartbeat != std::chrono::steady_clock::time_point{}) SleepFor(stop, idle_sleep);
      idle_sleep = std::min(idle_sleep * 2, kMaxIdleSleep);
      ClientHeartbeatRequest request{job->job_id, static_cast<uint64_t>(iteration), job->job_client_id,
                                     false};
      absl::StatusOr<Frame> beat = SyncWait(
          (*dispatcher)->CallOnce(FrameKind::kClientHeartbeat, EncodeClientHeartbeatRequest(request)), stop);
      absl::StatusOr<ClientHeartbeatResponse> response =
          beat.ok() ? DecodeClientHeartbeatResponse(beat->payload)
                    : absl::StatusOr<ClientHeartbeatResponse>(beat.status());
      if (stop.stop_requested()) return;
      if (!response.ok() && !(*dispatcher)->connected()) {
        // The dispatcher is gone (restarting?): keep reading the tasks already known, and reconnect.
        const auto now = std::chrono::steady_clock::now();
        if (!lost) lost_since = now;
        lost = true;
        if (now - lost_since > dispatcher_timeout) {
          return Fail(
              absl::UnavailableError(absl::StrCat(where, ": unreachable for ", options.dispatcher_timeout_ms,
                                                  " ms: ", response.status().message())));
        }
        (void)(*dispatcher)->Reconnect();  // the next heartbeat tells whether it worked
        last_heartbeat = now;
        continue;
      }
      lost = false;
      if (!response.ok())
        return Fail(
            absl::Status(response.status().code(), absl::StrCat(where, ": ", response.status().message())));
      if (!response->error.ok()) return Fail(response->error);
      last_heartbeat = std::chrono::steady_clock::now();
      for (const TaskInfo& info : response->tasks) {
        if (!tasks.contains(info.task_id)) tasks[info.task_id] = TaskState{info.worker_address, false};
      }
      // `finished` covers exactly the tasks listed with it: every one ended on
      // its worker.
      finished = response->finished;
      next_task = tasks.end();
      continue;
    }
    // Round robin over the tasks not yet ended.
    if (next_task == tasks.end()) next_task = tasks.begin();
    while (next_task != tasks.end() && next_task->second.done) ++next_task;
    if (next_task == tasks.end()) continue;
    const uint64_t task_id = next_task->first;
    TaskState& task = next_task->second;
    ++next_task;

    std::unique_ptr<Client>& worker = workers[task.address];
    if (worker == nullptr) {
      absl::StatusOr<HostPort> worker_address = ParseHostPort(task.address);
      absl::StatusOr<std::unique_ptr<Client>> connected =
          worker_address.ok() ? Client::Connect(worker_address->host, worker_address->port)
                              : absl::StatusOr<std::unique_ptr<Client>>(worker_address.status());
      if (!connected.ok()) {
        // A worker gone: its task's elements are lost (tf.data service's
        // at-most-once on worker loss).
        std::deque<absl::StatusOr<std::string>> lost;
        lost.push_back(absl::UnavailableError(absl::StrCat(
            where, ": worker ", task.address, " is unreachable: ", connected.status().message())));
        Deliver(std::move(lost), 0, false);
        task.done = true;
        workers.erase(task.address);
        continue;
      }
      worker = std::move(*connected);
    }
    const int64_t reserved = Reserve(stop);
    if (reserved == 0) return;
    if (reserved < 0) continue;  // heartbeat now, then try again
    GetElementsRequest request;
    request.task_id = task_id;
    request.max_elements = static_cast<uint32_t>(std::min<int64_t>(reserved, UINT32_MAX));
    request.max_bytes = options.max_request_bytes;
    if (options.stats) options.stats->requests.fetch_add(1, std::memory_order_relaxed);
    absl::StatusOr<Frame> answer =
        SyncWait(worker->Call(FrameKind::kGetElements, EncodeGetElementsRequest(request)), stop);
    absl::StatusOr<GetElementsResponse> response = answer.ok()
                                                       ? DecodeGetElementsResponse(answer->payload)
                                                       : absl::StatusOr<GetElementsResponse>(answer.status());
    if (stop.stop_requested()) return;
    if (!response.ok()) {
      Deliver({}, reserved, false);
      if (response.status().code() == absl::StatusCode::kUnavailable) {
        std::deque<absl::StatusOr<std::string>> lost;
        lost.push_back(absl::UnavailableError(
            absl::StrCat(where, ": worker ", task.address, ": ", response.status().message())));
        Deliver(std::move(lost), 0, false);
        task.done = true;
        workers.erase(task.address);
        continue;
      }
      // The task failed: the job fails with the worker's reason.
      return Fail(response.status());
    }
    std::deque<absl::StatusOr<std::string>> items;
    for (std::string& element : response->elements) items.push_back(std::move(element));
    if (!response->error.ok()) items.push_back(response->error);
    if (options.stats)
      options.stats->elements.fetch_add(static_cast<int64_t>(response->elements.size()),
                                        std::memory_order_relaxed);
    const bool got = !items.empty();
    Deliver(std::move(items), reserved, false);
    if (response->end_of_sequence) task.done = true;
    if (got || response->end_of_sequence) {
      empty_answers = 0;
      idle_sleep = std::chrono::milliseconds(1);
    } else if (++empty_answers >= static_cast<int>(tasks.size())) {
      // A round of empty answers: the workers are still producing.
      SleepFor(stop, idle_sleep);
      idle_sleep = std::min(idle_sleep * 2, kMaxIdleSleep);
      empty_answers = 0;
    }
  }
}

ServiceReader::ServiceReader(std::string graph, std::string element_type, ServiceOptions options,
                             int64_t iteration, std::shared_ptr<std::atomic<uint64_t>> anonymous_job,
                             IteratorContextPtr context)
    : impl_(std::make_shared<Impl>(std::move(graph), std::move(element_type), std::move(options), iteration,
                                   std::move(anonymous_job), std::move(context))) {
  Impl* raw = impl_.get();  // the thread is joined in the destructor, before impl_ goes
  impl_->fetcher = std::jthread([raw](std::stop_token stop) { raw->Run(std::move(stop)); });
}

ServiceSource::~ServiceSource() = default;

ServiceReader::~ServiceReader() {
  impl_->fetcher.request_stop();
  if (impl_->fetcher.joinable()) impl_->fetcher.join();
}

PollState ServiceReader::Poll(absl::StatusOr<std::string>* out) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->buffer.empty()) {
      *out = std::move(impl_->buffer.front());
      impl_->buffer.pop_front();
      --impl_->outstanding;
    } else if (impl_->ended) {
      return PollState::kEnd;
    } else {
      // Under the lock: a Deliver after this Reset sets the event again, so no
      // wake-up is lost.
      impl_->ready.Reset();
      return PollState::kPending;
    }
  }
  impl_->space.notify_all();
  return PollState::kReady;
}

namespace {
// Awaited by the stream's consumer while the stream (and so `impl`) lives.
Task<void> WaitOn(ServiceReader::Impl* impl) {
  absl::Status woken = co_await impl->ready.Wait();
  (void)woken;  // cancelled: the consumer's own stop ends its wait
}
}  // namespace

Task<void> ServiceReader::WaitReady() { return WaitOn(impl_.get()); }

}  // namespace sluice::service::detail
