#include "distribute/service/worker.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/service/address.h"
#include "distribute/service/client.h"
#include "distribute/service/cpu_shares.h"
#include "distribute/service/dispatcher_link.h"
#include "distribute/service/messages.h"
#include "distribute/service/server.h"
#include "distribute/service/split_source.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/ops/graph.h"
#include "sluice/ops/graph_format.h"
#include "sluice/ops/iterator.h"
#include "sluice/ops/split_reader.h"

namespace sluice::service {
namespace {

constexpr const char* kWhyCancelled = "its consumers left, or it restarted without a work folder";

// One task's pipeline output, between its producer thread and GetElements.
struct WorkerTask {
  TaskDef def;
  std::mutex mu;
  std::condition_variable_any space;
  std::deque<absl::StatusOr<std::string>> buffer;
  int64_t bytes = 0;
  bool ended = false;   // the pipeline ended, or could not be built (failed)
  absl::Status failed;  // the task cannot run at all
  // Its part of the worker's pool while its pipeline runs (also while it waits for room in `buffer`).
  std::optional<CpuShares::Share> cpu_share;
  std::jthread producer;
};

// Awaited inside SyncWait in the same statement, so `it` outlives the task.
Task<absl::StatusOr<std::optional<std::string>>> NextOf(Iterator<std::string>* it) {
  absl::StatusOr<std::optional<std::string>> next = co_await it->Next();
  co_return next;
}

// Splits of one distributed_epoch task, asked of the dispatcher on demand. While the pipeline reads a
// split, the next one is already being asked for (one in flight), so a split boundary rarely waits for
// a round trip.
class DispatcherSplitFeed final : public SplitFeed {
 public:
  // `dispatcher` outlives the feed: the worker joins its producers (whose pipelines own the feed) before
  // closing the link.
  DispatcherSplitFeed(DispatcherLink* dispatcher, uint64_t task_id, SplittableSource source,
                      GraphNode source_node)
      : dispatcher_(dispatcher),
        task_id_(task_id),
        source_(std::move(source)),
        source_node_(std::move(source_node)) {}
  // The prefetch observes the scope's stop token; ~AsyncScope requests stop and joins it.
  ~DispatcherSplitFeed() override = default;

  Task<absl::StatusOr<std::optional<Split>>> Next() override {
    absl::StatusOr<GetSplitResponse> response = absl::UnknownError("no split");
    if (prefetching_) {
      absl::Status woken = co_await prefetched_.Wait();
      if (!woken.ok()) co_return woken;  // the pipeline is being cancelled; the prefetch stays owned
      prefetching_ = false;
      prefetched_.Reset();
      std::lock_guard<std::mutex> lock(mu_);
      response = std::move(slot_);
    } else {
      Task<absl::StatusOr<GetSplitResponse>> fetch = Fetch(dispatcher_, task_id_, next_index_++);
      response = co_await std::move(fetch);
    }
    if (!response.ok()) co_return response.status();
    if (response->end_of_splits) co_return std::optional<Split>();
    prefetching_ = true;
    scope_.Spawn(Prefetch(this));
    const auto begin = static_cast<int64_t>(response->begin);
    const auto end = static_cast<int64_t>(response->end);
    if (!source_.files) co_return std::optional<Split>(Split{nullptr, begin, end});
    absl::StatusOr<GraphNode> node = FileSplitSource(source_node_, begin, end);
    if (!node.ok()) co_return node.status();
    absl::StatusOr<AnyDataset> built = BuildGraph(*node);
    if (!built.ok()) co_return built.status();
    co_return std::optional<Split>(Split{built->node(), 0, -1});
  }

 private:
  // Repeated across dispatcher restarts: split `index` is the same split however often it is asked for.
  static Task<absl::StatusOr<GetSplitResponse>> Fetch(DispatcherLink* dispatcher, uint64_t task_id,
                                                      uint64_t index) {
    std::string payload = EncodeGetSplitRequest(GetSplitRequest{task_id, index});
    Task<absl::StatusOr<Frame>> call = dispatcher->Call(FrameKind::kGetSplit, std::move(payload));
    absl::StatusOr<Frame> frame = co_await std::move(call);
    if (!frame.ok()) {
      co_return absl::Status(frame.status().code(),
                             absl::StrCat("asking the dispatcher for a split: ", frame.status().message()));
    }
    co_return DecodeGetSplitResponse(frame->payload);
  }

  // `feed` outlives the task: its scope joins the task before the feed goes.
  static Task<void> Prefetch(DispatcherSplitFeed* feed) {
    Task<absl::StatusOr<GetSplitResponse>> fetch =
        Fetch(feed->dispatcher_, feed->task_id_, feed->next_index_++);
    absl::StatusOr<GetSplitResponse> response = co_await std::move(fetch);
    {
      std::lock_guard<std::mutex> lock(feed->mu_);
      feed->slot_ = std::move(response);
    }
    feed->prefetched_.Set();
  }

  DispatcherLink* dispatcher_;
  uint64_t task_id_;
  uint64_t next_index_ = 0;  // the split asked for next; Next() and its one prefetch take turns
  SplittableSource source_;
  GraphNode source_node_;
  bool prefetching_ = false;  // Next() only (one consumer)
  std::mutex mu_;
  absl::StatusOr<GetSplitResponse> slot_ = absl::UnknownError("no split");
  AsyncEvent prefetched_;
  AsyncScope scope_;  // last: destroyed (joined) first, while the members its task touches still live
};

}  // namespace

struct Worker::Impl {
  explicit Impl(WorkerConfig worker_config) : config(std::move(worker_config)) {}

  void LogLine(const std::string& line) const {
    if (config.log) config.log(line);
  }
  absl::Status Register(std::stop_token stop);
  // Wakes the heartbeat thread now: a drained task is reported at once, so its iteration finishes sooner.
  void BeatNow();
  void HeartbeatLoop(std::stop_token stop);
  void StartTask(TaskDef def);
  // The dispatcher cancelled the task (its consumers left): stop its producer and drop its elements.
  void CancelTask(uint64_t id);
  void Produce(std::stop_token stop, WorkerTask* task);
  absl::StatusOr<Dataset<std::string>> BuildPipeline(const TaskDef& def, const std::string& feed_id);
  absl::StatusOr<std::string> Handle(const Frame& request);
  absl::StatusOr<std::string> GetElements(const GetElementsRequest& request);
  // Tells the dispatcher this worker is leaving, so its tasks end now rather than at the timeout.
  void SayGoodbye();
  void Stop();

  const WorkerConfig config;
  std::unique_ptr<ThreadPool> pool;
  CpuShares cpu_shares{config.threads};
  std::unique_ptr<Server> server;
  std::unique_ptr<DispatcherLink> dispatcher;
  std::string address;
  uint64_t worker_id = 0;  // heartbeat thread only (after Start)

  std::mutex mu;
  std::map<uint64_t, std::shared_ptr<WorkerTask>> tasks;
  std::map<uint64_t, absl::Status> finished;  // reported tasks: OK, or why they failed

  std::mutex beat_mu;
  std::condition_variable_any beat_cv;
  bool beat_now = false;
  std::jthread heartbeat;
  std::mutex stop_mu;
  bool stopped = false;
};

namespace {

Task<absl::StatusOr<std::string>> AnswerOn(Worker::Impl* impl, Frame request) {
  co_return impl->Handle(request);
}

}  // namespace

void Worker::Impl::BeatNow() {
  {
    std::lock_guard<std::mutex> lock(beat_mu);
    beat_now = true;
  }
  beat_cv.notify_all();
}

absl::Status Worker::Impl::Register(std::stop_token stop) {
  std::string payload = EncodeRegisterWorkerRequest(RegisterWorkerRequest{address});
  absl::StatusOr<Frame> frame =
      SyncWait(dispatcher->CallOnce(FrameKind::kRegisterWorker, std::move(payload)), std::move(stop));
  if (!frame.ok()) return frame.status();
  absl::StatusOr<RegisterWorkerResponse> response = DecodeRegisterWorkerResponse(frame->payload);
  if (!response.ok()) return response.status();
  worker_id = response->worker_id;
  LogLine(absl::StrCat("registered with the dispatcher at ", config.dispatcher_address, " as worker ",
                       worker_id));
  return absl::OkStatus();
}

void Worker::Impl::HeartbeatLoop(std::stop_token stop) {
  std::string last_error;
  bool lost = false;  // the dispatcher is unreachable, since lost_since
  std::chrono::steady_clock::time_point lost_since;
  bool gave_up = false;
  const auto dispatcher_timeout = std::chrono::milliseconds(config.dispatcher_timeout_ms);
  while (!stop.stop_requested()) {
    if (!dispatcher->connected()) {
      const auto now = std::chrono::steady_clock::now();
      if (!lost) {
        lost = true;
        lost_since = now;
        LogLine(absl::StrCat("lost the dispatcher at ", config.dispatcher_address, "; reconnecting"));
      }
      if (absl::Status s = dispatcher->Reconnect(); s.ok()) {
        LogLine(absl::StrCat("reconnected to the dispatcher at ", config.dispatcher_address));
        lost = false;
        gave_up = false;
      } else if (!gave_up && now - lost_since > dispatcher_timeout) {
        // Tasks waiting for a split fail; the worker keeps trying, for a dispatcher that comes back later.
        dispatcher->GiveUp(absl::UnavailableError(
            absl::StrCat("the dispatcher at ", config.dispatcher_address, " has been unreachable for ",
                         config.dispatcher_timeout_ms, " ms: ", s.message())));
        LogLine(absl::StrCat("the dispatcher has been unreachable for ", config.dispatcher_timeout_ms,
                             " ms; tasks waiting for a split fail"));
        gave_up = true;
      }
    }
    WorkerHeartbeatRequest request;
    request.worker_id = worker_id;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [id, task] : tasks) {
        request.current_tasks.push_back(id);
        std::lock_guard<std::mutex> task_lock(task->mu);
        if (!task->failed.ok()) {
          request.reports.push_back(TaskReport{id, task->failed});
        } else if (task->ended && task->buffer.empty()) {
          request.reports.push_back(TaskReport{id, absl::OkStatus()});
        }
      }
    }
    absl::StatusOr<Frame> frame = SyncWait(
        dispatcher->CallOnce(FrameKind::kWorkerHeartbeat, EncodeWorkerHeartbeatRequest(request)), stop);
    absl::StatusOr<WorkerHeartbeatResponse> response =
        frame.ok() ? DecodeWorkerHeartbeatResponse(frame->payload)
                   : absl::StatusOr<WorkerHeartbeatResponse>(frame.status());
    if (stop.stop_requested()) break;
    if (response.ok()) {
      last_error.clear();
      std::vector<std::shared_ptr<WorkerTask>> done;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const TaskReport& report : request.reports) {
          auto it = tasks.find(report.task_id);
          if (it == tasks.end()) continue;
          done.push_back(std::move(it->second));
          tasks.erase(it);
          finished[report.task_id] = report.error;
        }
      }
      for (const std::shared_ptr<WorkerTask>& task : done) {
        LogLine(absl::StrCat("task ", task->def.task_id, " (job ", task->def.job_id, " iteration ",
                             task->def.iteration, ") ", task->failed.ok() ? "finished" : "failed"));
      }
      done.clear();  // joins the producers, which have ended
      // Cancelled tasks first: their threads and memory go back before new tasks start (a trainer's next
      // epoch often arrives in the same answer as its abandoned previous one).
      for (uint64_t id : response->cancelled_tasks) CancelTask(id);
      for (TaskDef& def : response->tasks) StartTask(std::move(def));
    } else if (response.status().code() == absl::StatusCode::kNotFound) {
      LogLine("the dispatcher does not know this worker (it restarted?); registering again");
      if (absl::Status s = Register(stop); !s.ok())
        LogLine(absl::StrCat("registering again failed: ", s.message()));
    } else if (std::string error(response.status().message()); error != last_error) {
      LogLine(absl::StrCat("heartbeat failed: ", error));
      last_error = std::move(error);
    }
    std::unique_lock<std::mutex> lock(beat_mu);
    beat_cv.wait_for(lock, stop, std::chrono::milliseconds(config.heartbeat_interval_ms),
                     [this] { return beat_now; });
    beat_now = false;
  }
}

void Worker::Impl::CancelTask(uint64_t id) {
  std::shared_ptr<WorkerTask> task;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = tasks.find(id);
    if (it == tasks.end()) return;
    task = std::move(it->second);
    tasks.erase(it);
    // A consumer still asking (it was presumed gone) learns why the task ended.
    finished[id] =
        absl::CancelledError(absl::StrCat("task ", id, " was cancelled by the dispatcher: ", kWhyCancelled));
  }
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(task->mu);
    dropped = task->buffer.size();
  }
  LogLine(absl::StrCat("task ", id, " (job ", task->def.job_id, " iteration ", task->def.iteration,
                       ") cancelled by the dispatcher (", kWhyCancelled, "); ", dropped,
                       " buffered elements dropped"));
  task.reset();  // stops and joins its producer, unless a GetElements call still holds the task
}

void Worker::Impl::StartTask(TaskDef def) {
  auto task = std::make_shared<WorkerTask>();
  task->def = std::move(def);
  const uint64_t id = task->def.task_id;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (tasks.contains(id) || finished.contains(id)) return;
    tasks[id] = task;
  }
  task->cpu_share.emplace(cpu_shares.Join());
  LogLine(absl::StrCat("task ", id, " (job ", task->def.job_id, " iteration ", task->def.iteration, ", ",
                       ProcessingModeName(task->def.mode), ") started, ",
                       task->cpu_share->value()->load(std::memory_order_relaxed), " of ",
                       cpu_shares.threads(), " threads"));
  // A raw pointer: whoever drops the last reference destroys the jthread, which
  // joins the producer first (a reference held by the producer could make it
  // join itself).
  WorkerTask* raw = task.get();
  task->producer = std::jthread([this, raw](std::stop_token stop) { Produce(std::move(stop), raw); });
}

absl::StatusOr<Dataset<std::string>> Worker::Impl::BuildPipeline(const TaskDef& def,
                                                                 const std::string& feed_id) {
  absl::StatusOr<GraphNode> graph = ParseGraph(def.graph);
  if (!graph.ok()) return graph.status();
  std::optional<SplittableSource> source;
  if (def.mode == ProcessingMode::kDistributedEpoch) {
    absl::StatusOr<SplittableSource> found = FindSplittableSource(*graph);
    if (!found.ok()) return found.status();
    source = std::move(*found);
    const GraphNode* node = &*graph;
    for (size_t i : source->path) node = &node->inputs[i];
    RegisterSplitFeed(feed_id,
                      std::make_shared<DispatcherSplitFeed>(dispatcher.get(), def.task_id, *source, *node));
  }
  absl::StatusOr<GraphNode> worker_graph =
      WorkerGraph(std::move(*graph), source ? &*source : nullptr, feed_id);
  if (!worker_graph.ok()) return worker_graph.status();
  absl::StatusOr<AnyDataset> built = BuildGraph(*worker_graph);
  if (source) UnregisterSplitFeed(feed_id);  // the built reader holds the feed
  if (!built.ok()) return built.status();
  return built->As<std::string>();
}

void Worker::Impl::Produce(std::stop_token stop, WorkerTask* task) {
  // The share goes back to the other tasks when the pipeline ends (however it ends), after the iterator.
  struct ShareRelease {
    WorkerTask* task;
    ~ShareRelease() { task->cpu_share.reset(); }
  } release{task};
  const std::string feed_id = absl::StrCat("worker ", address, " task ", task->def.task_id);
  absl::StatusOr<Dataset<std::string>> dataset = BuildPipeline(task->def, feed_id);
  if (!dataset.ok()) {
    LogLine(absl::StrCat("task ", task->def.task_id, " cannot run: ", dataset.status().message()));
    std::lock_guard<std::mutex> lock(task->mu);
    task->failed = dataset.status();
    task->ended = true;
    return;
  }
  auto context = std::make_shared<IteratorContext>();
  context->pool = pool.get();
  context->cpu_share = task->cpu_share->value();
  // Iteration k is the pipeline's pass k, so ops that reshuffle each iteration
  // differ between them.
  context->state = std::make_shared<IteratorState>(task->def.iteration);
  IteratorContextPtr shared = context;
  Iterator<std::string> it(dataset->node()->MakeStream(shared), shared);
  const auto max_elements = static_cast<size_t>(std::max<int64_t>(1, config.max_buffered_elements));
  const int64_t max_bytes = std::max<int64_t>(1, config.max_buffered_bytes);
  while (!stop.stop_requested()) {
    absl::StatusOr<std::optional<std::string>> next = SyncWait(NextOf(&it), stop);
    if (stop.stop_requested()) break;
    std::unique_lock<std::mutex> lock(task->mu);
    if (next.ok() && !next->has_value()) {
      task->ended = true;
      break;
    }
    if (next.ok()) {
      task->bytes += static_cast<int64_t>((*next)->size());
      task->buffer.emplace_back(std::move(**next));
    } else {
      task->buffer.emplace_back(std::move(next).status());
    }
    const auto has_room = [&] { return task->buffer.size() < max_elements && task->bytes < max_bytes; };
    if (has_room()) continue;
    // Waiting for the consumer (perhaps gone for good): the other tasks may use this one's threads.
    lock.unlock();
    task->cpu_share->SetIdle(true);
    lock.lock();
    task->space.wait(lock, stop, has_room);
    lock.unlock();
    task->cpu_share->SetIdle(false);
  }
}

absl::StatusOr<std::string> Worker::Impl::GetElements(const GetElementsRequest& request) {
  std::shared_ptr<WorkerTask> task;
  GetElementsResponse response;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = tasks.find(request.task_id);
    if (it == tasks.end()) {
      auto done = finished.find(request.task_id);
      if (done == finished.end()) return EncodeGetElementsResponse(response);  // not received yet
      if (!done->second.ok()) return done->second;
      response.end_of_sequence = true;
      return EncodeGetElementsResponse(response);
    }
    task = it->second;
  }
  {
    std::lock_guard<std::mutex> lock(task->mu);
    if (!task->failed.ok()) return task->failed;
    uint64_t bytes = 0;
    while (!task->buffer.empty() && response.elements.size() < request.max_elements) {
      absl::StatusOr<std::string>& front = task->buffer.front();
      if (!front.ok()) {
        if (response.elements.empty()) {
          response.error = front.status();
          task->buffer.pop_front();
        }
        break;
      }
      if (!response.elements.empty() && bytes + front->size() > request.max_bytes) break;
      bytes += front->size();
      task->bytes -= static_cast<int64_t>(front->size());
      response.elements.push_back(std::move(*front));
      task->buffer.pop_front();
    }
    response.end_of_sequence = task->ended && task->buffer.empty();
  }
  task->space.notify_all();
  if (response.end_of_sequence) BeatNow();
  return EncodeGetElementsResponse(response);
}

absl::StatusOr<std::string> Worker::Impl::Handle(const Frame& request) {
  if (request.kind == FrameKind::kPing) return request.payload;
  if (request.kind != FrameKind::kGetElements) {
    return absl::UnimplementedError(absl::StrCat("a worker does not answer ", FrameKindName(request.kind)));
  }
  absl::StatusOr<GetElementsRequest> decoded = DecodeGetElementsRequest(request.payload);
  if (!decoded.ok()) return decoded.status();
  return GetElements(*decoded);
}

void Worker::Impl::SayGoodbye() {
  // Bounded: a dispatcher that does not answer within a second learns of it by the heartbeat timeout.
  WorkerHeartbeatRequest request;
  request.worker_id = worker_id;
  request.leaving = true;
  absl::StatusOr<Frame> answer = CallWithin(*dispatcher->client(), FrameKind::kWorkerHeartbeat,
                                            EncodeWorkerHeartbeatRequest(request), std::chrono::seconds(1));
  if (!answer.ok())
    LogLine(absl::StrCat("telling the dispatcher this worker stops: ", answer.status().message()));
}

void Worker::Impl::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu);
  if (stopped) return;
  stopped = true;
  if (heartbeat.joinable()) {
    heartbeat.request_stop();
    heartbeat.join();
  }
  std::map<uint64_t, std::shared_ptr<WorkerTask>> running;
  {
    std::lock_guard<std::mutex> lock(mu);
    running = tasks;
  }
  for (auto& [id, task] : running) task->producer.request_stop();
  for (auto& [id, task] : running) {
    if (task->producer.joinable()) task->producer.join();
  }
  if (server) server->Stop();
  if (dispatcher && worker_id != 0) SayGoodbye();
  dispatcher.reset();  // closes the connection; no call waits on it any more (the producers are joined)
  if (pool) pool->Stop();
  LogLine("stopped");
}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Start(WorkerConfig config) {
  absl::StatusOr<HostPort> dispatcher_address = ParseHostPort(config.dispatcher_address);
  if (!dispatcher_address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker: dispatcher ", dispatcher_address.status().message()));
  }
  if (config.dispatcher_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker: dispatcher_timeout_ms must be positive, not ", config.dispatcher_timeout_ms));
  }
  auto impl = std::make_unique<Impl>(std::move(config));
  impl->pool = std::make_unique<ThreadPool>(std::max(1, impl->config.threads));
  Impl* raw = impl.get();
  ServerOptions server_options;
  server_options.host = impl->config.host;
  server_options.port = impl->config.port;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(server_options, [raw](Frame request) { return AnswerOn(raw, std::move(request)); });
  if (!server.ok()) return server.status();
  impl->server = std::move(*server);
  impl->address = absl::StrCat(impl->config.host, ":", impl->server->port());
  ClientOptions client_options;
  client_options.executor = impl->pool.get();
  // A reconnect attempt holds up the heartbeat thread at most this long.
  client_options.connect_timeout =
      std::chrono::milliseconds(std::clamp<int64_t>(impl->config.heartbeat_interval_ms * 10, 100, 10000));
  absl::StatusOr<std::unique_ptr<DispatcherLink>> link =
      DispatcherLink::Connect(impl->config.dispatcher_address, client_options);
  if (!link.ok()) {
    impl->Stop();
    return link.status();
  }
  impl->dispatcher = std::move(*link);
  if (absl::Status s = impl->Register({}); !s.ok()) {
    impl->Stop();
    return absl::UnavailableError(absl::StrCat("worker: registering with the dispatcher at ",
                                               impl->config.dispatcher_address, ": ", s.message()));
  }
  impl->heartbeat = std::jthread([raw](std::stop_token stop) { raw->HeartbeatLoop(std::move(stop)); });
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() { Stop(); }
std::string Worker::address() const { return impl_->address; }
void Worker::Stop() { impl_->Stop(); }

}  // namespace sluice::service
