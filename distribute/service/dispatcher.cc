#include "distribute/service/dispatcher.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sluice/ops/graph_format.h"

namespace sluice::service {
namespace {

template <class M>
absl::StatusOr<std::string> Encoded(absl::StatusOr<M> message, std::string (*encode)(const M&)) {
  if (!message.ok()) return message.status();
  return encode(*message);
}

constexpr uint64_t kIdBlock = 1024;  // ids reserved per journal record

// In [1, 2^40): two dispatchers' ranges overlap with a chance of about (ids used) / 2^40.
uint64_t RandomFirstId() {
  std::random_device device;
  const uint64_t bits = (uint64_t{device()} << 32) ^ device();
  return 1 + bits % ((uint64_t{1} << 40) - 1);
}

JournalEvent WorkerDropped(uint64_t worker_id, std::string reason) {
  JournalEvent event;
  event.kind = JournalEventKind::kWorkerDropped;
  event.id = worker_id;
  event.reason = std::move(reason);
  return event;
}

JournalEvent IterationCancelled(uint64_t job_id, uint64_t iteration, std::string reason) {
  JournalEvent event;
  event.kind = JournalEventKind::kIterationCancelled;
  event.job_id = job_id;
  event.iteration = iteration;
  event.reason = std::move(reason);
  return event;
}

std::string KindName(JournalEventKind kind) {
  switch (kind) {
    case JournalEventKind::kIdsReserved:
      return "ids reserved";
    case JournalEventKind::kJobCreated:
      return "job created";
    case JournalEventKind::kIterationStarted:
      return "iteration started";
    case JournalEventKind::kWorkerRegistered:
      return "worker registered";
    case JournalEventKind::kTaskCreated:
      return "task created";
    case JournalEventKind::kTaskFinished:
      return "task finished";
    case JournalEventKind::kWorkerDropped:
      return "worker dropped";
    case JournalEventKind::kIterationCancelled:
      return "iteration cancelled";
    case JournalEventKind::kSplitGiven:
      return "split given";
    case JournalEventKind::kUnspecified:
      break;
  }
  return "unspecified";
}

}  // namespace

Dispatcher::Dispatcher(int64_t worker_timeout_ms, Log log, Now now, int64_t client_timeout_ms)
    : worker_timeout_(worker_timeout_ms),
      client_timeout_(client_timeout_ms),
      log_(std::move(log)),
      now_(std::move(now)),
      next_id_(RandomFirstId()) {}

void Dispatcher::LogLine(const std::string& line) const {
  if (log_ && !replaying_) log_(line);
}

std::string Dispatcher::JobLabel(const Job& job) const {
  return job.name.empty() ? absl::StrCat("job ", job.id) : absl::StrCat("job ", job.id, " '", job.name, "'");
}

absl::Status Dispatcher::Recover(std::unique_ptr<Journal> journal, const std::vector<std::string>& replay) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = journal->path();
  replaying_ = true;
  for (size_t i = 0; i < replay.size(); ++i) {
    absl::StatusOr<JournalEvent> event = DecodeJournalEvent(replay[i]);
    absl::Status applied = event.ok() ? ApplyLocked(*event) : event.status();
    if (!applied.ok()) {
      replaying_ = false;
      return absl::DataLossError(
          absl::StrCat("the dispatcher's journal ", path, " cannot be replayed: record ", i,
                       event.ok() ? absl::StrCat(" (", KindName(event->kind), ")") : std::string(), ": ",
                       applied.message()));
    }
  }
  replaying_ = false;
  journal_ = std::move(journal);
  next_id_ = std::max(next_id_, reserved_until_);  // ids handed out before the restart are never reused
  if (replay.empty()) return absl::OkStatus();
  const Clock::time_point now = now_();
  int unfinished = 0;
  for (auto& [job_id, job] : jobs_) {
    for (auto& [k, iteration] : job.iterations) {
      if (iteration.finished) continue;
      // A placeholder consumer: the iteration waits client_timeout_ms for its consumers to come back.
      iteration.clients[0] = now;
      ++unfinished;
    }
  }
  for (auto& [id, worker] : workers_) {
    worker.last_seen = now;
    // Replay leaves every task of a worker undelivered; the finished ones need no second delivery.
    std::erase_if(worker.undelivered, [&](uint64_t task) { return tasks_.at(task).done; });
  }
  LogLine(absl::StrCat("recovered from ", path, " (", replay.size(), " records): ", jobs_.size(), " jobs, ",
                       unfinished, " unfinished iterations, ", workers_.size(),
                       " workers awaited (their heartbeats within ", worker_timeout_.count(), " ms)"));
  return absl::OkStatus();
}

absl::Status Dispatcher::CommitLocked(const JournalEvent& event) {
  if (journal_ != nullptr && !replaying_) {
    if (absl::Status written = journal_->Append(EncodeJournalEvent(event)); !written.ok()) {
      LogLine(std::string(written.message()));
      return written;
    }
  }
  return ApplyLocked(event);
}

absl::StatusOr<uint64_t> Dispatcher::NewIdLocked() {
  if (journal_ != nullptr && next_id_ >= reserved_until_) {
    JournalEvent reserve;
    reserve.kind = JournalEventKind::kIdsReserved;
    reserve.id = next_id_ + kIdBlock;
    if (absl::Status s = CommitLocked(reserve); !s.ok()) return s;
  }
  return next_id_++;
}

absl::Status Dispatcher::ApplyLocked(const JournalEvent& event) {
  auto missing = [&](absl::string_view what, uint64_t id) {
    return absl::FailedPreconditionError(absl::StrCat("names ", what, " ", id, ", which does not exist"));
  };
  // Only a damaged or foreign journal repeats an id; the state's cross references rely on them being unique.
  auto taken = [](absl::string_view what, uint64_t id) {
    return absl::FailedPreconditionError(absl::StrCat("creates ", what, " ", id, ", which exists"));
  };
  // Never hand out an id the state already uses (a journal's reservations cover this; one without them
  // must not make the next request collide).
  if (event.kind != JournalEventKind::kIdsReserved) next_id_ = std::max(next_id_, event.id + 1);
  switch (event.kind) {
    case JournalEventKind::kIdsReserved:
      reserved_until_ = std::max(reserved_until_, event.id);
      return absl::OkStatus();
    case JournalEventKind::kJobCreated: {
      if (jobs_.contains(event.id)) return taken("job", event.id);
      absl::StatusOr<GraphNode> graph = ParseGraph(event.graph);
      if (!graph.ok()) return graph.status();
      std::optional<SplittableSource> source;
      if (event.mode == ProcessingMode::kDistributedEpoch) {
        absl::StatusOr<SplittableSource> found = FindSplittableSource(*graph);
        if (!found.ok()) return found.status();
        source = std::move(*found);
      }
      Job& created = jobs_[event.id];
      created.id = event.id;
      created.name = event.name;
      created.graph = event.graph;
      created.element_type = graph->element_type;
      created.fingerprint = Fingerprint(*graph);
      created.mode = event.mode;
      created.source = std::move(source);
      if (!created.name.empty()) jobs_by_name_[created.name] = event.id;
      std::string line =
          absl::StrCat(JobLabel(created), " created: ", ProcessingModeName(created.mode), ", yields ",
                       created.element_type, ", fingerprint ", FingerprintHex(created.fingerprint));
      if (created.source) {
        absl::StrAppend(&line, ", splits ", created.source->op, " at ", created.source->path_text, " (",
                        created.source->units, created.source->files ? " files)" : " elements)");
      }
      LogLine(line);
      return absl::OkStatus();
    }
    case JournalEventKind::kIterationStarted: {
      auto job = jobs_.find(event.job_id);
      if (job == jobs_.end()) return missing("job", event.job_id);
      job->second.iterations[event.iteration];
      return absl::OkStatus();
    }
    case JournalEventKind::kWorkerRegistered: {
      if (workers_.contains(event.id)) return taken("worker", event.id);
      Worker& worker = workers_[event.id];
      worker.id = event.id;
      worker.address = event.address;
      worker.last_seen = now_();
      LogLine(absl::StrCat("worker ", event.id, " joined from ", event.address));
      return absl::OkStatus();
    }
    case JournalEventKind::kTaskCreated: {
      auto job = jobs_.find(event.job_id);
      if (job == jobs_.end()) return missing("job", event.job_id);
      auto iteration = job->second.iterations.find(event.iteration);
      if (iteration == job->second.iterations.end()) return missing("iteration", event.iteration);
      if (tasks_.contains(event.id)) return taken("task", event.id);
      TaskRecord& task = tasks_[event.id];
      task.id = event.id;
      task.job_id = event.job_id;
      task.iteration = event.iteration;
      task.worker_id = event.worker_id;
      iteration->second.tasks.push_back(event.id);
      auto worker = workers_.find(event.worker_id);
      if (worker != workers_.end()) worker->second.undelivered.push_back(event.id);
      return absl::OkStatus();
    }
    case JournalEventKind::kTaskFinished:
      ApplyTaskFinishedLocked(event);
      return absl::OkStatus();
    case JournalEventKind::kWorkerDropped:
      ApplyDropWorkerLocked(event.id, event.reason);
      return absl::OkStatus();
    case JournalEventKind::kIterationCancelled: {
      auto job = jobs_.find(event.job_id);
      if (job == jobs_.end()) return missing("job", event.job_id);
      ApplyCancelIterationLocked(job->second, event.iteration, event.reason);
      return absl::OkStatus();
    }
    case JournalEventKind::kSplitGiven: {
      auto task = tasks_.find(event.id);
      if (task == tasks_.end()) return missing("task", event.id);
      if (event.split_index != task->second.splits.size()) {
        return absl::FailedPreconditionError(absl::StrCat("split ", event.split_index, " of task ", event.id,
                                                          " follows ", task->second.splits.size(),
                                                          " splits"));
      }
      task->second.splits.emplace_back(event.begin, event.end);
      Iteration& iteration = jobs_.at(task->second.job_id).iterations[task->second.iteration];
      iteration.next_split = std::max(iteration.next_split, static_cast<int64_t>(event.end));
      return absl::OkStatus();
    }
    case JournalEventKind::kUnspecified:
      break;
  }
  return absl::InvalidArgumentError("an event of unspecified kind");
}

absl::StatusOr<GetOrCreateJobResponse> Dispatcher::GetOrCreateJob(const GetOrCreateJobRequest& request) {
  if (request.mode != ProcessingMode::kParallelEpochs && request.mode != ProcessingMode::kDistributedEpoch) {
    return absl::InvalidArgumentError("GetOrCreateJob: the processing mode is unspecified");
  }
  absl::StatusOr<GraphNode> graph = ParseGraph(request.graph);
  if (!graph.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetOrCreateJob: the graph does not parse: ", graph.status().message()));
  }
  if (absl::Status s = CheckClientGraph(*graph); !s.ok()) return s;
  const uint64_t fingerprint = Fingerprint(*graph);
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = now_();
  ExpireLocked(now);
  Job* job = nullptr;
  if (!request.job_name.empty()) {
    auto named = jobs_by_name_.find(request.job_name);
    if (named != jobs_by_name_.end()) job = &jobs_.at(named->second);
  } else if (request.job_id != 0) {
    auto it = jobs_.find(request.job_id);
    if (it == jobs_.end() || !it->second.name.empty()) {
      return absl::NotFoundError(absl::StrCat("GetOrCreateJob: no anonymous job ", request.job_id));
    }
    job = &it->second;
  }
  if (job != nullptr) {
    const std::string label = JobLabel(*job);
    if (job->element_type != graph->element_type) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, " yields ", job->element_type, ", this consumer's pipeline yields ", graph->element_type));
    }
    if (job->mode != request.mode) {
      return absl::InvalidArgumentError(absl::StrCat(label, " runs in ", ProcessingModeName(job->mode),
                                                     " mode; this consumer asked for ",
                                                     ProcessingModeName(request.mode)));
    }
    if (job->fingerprint != fingerprint) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, " reads another dataset (fingerprint ", FingerprintHex(job->fingerprint),
                       "; this consumer's is ", FingerprintHex(fingerprint), ")"));
    }
  } else {
    // Refused here, before anything is journaled.
    if (request.mode == ProcessingMode::kDistributedEpoch) {
      if (absl::StatusOr<SplittableSource> found = FindSplittableSource(*graph); !found.ok()) {
        return found.status();
      }
    }
    absl::StatusOr<uint64_t> id = NewIdLocked();
    if (!id.ok()) return id.status();
    JournalEvent created;
    created.kind = JournalEventKind::kJobCreated;
    created.id = *id;
    created.name = request.job_name;
    created.graph = request.graph;
    created.mode = request.mode;
    if (absl::Status s = CommitLocked(created); !s.ok()) return s;
    job = &jobs_.at(*id);
  }
  if (!job->iterations.contains(request.iteration)) {
    JournalEvent started;
    started.kind = JournalEventKind::kIterationStarted;
    started.job_id = job->id;
    started.iteration = request.iteration;
    if (absl::Status s = CommitLocked(started); !s.ok()) return s;
    for (auto& [id, worker] : workers_) {
      if (absl::Status s = AddTaskLocked(*job, request.iteration, worker); !s.ok()) return s;
    }
    LogLine(absl::StrCat(JobLabel(*job), " iteration ", request.iteration, " started with ",
                         job->iterations[request.iteration].tasks.size(), " tasks"));
  }
  absl::StatusOr<uint64_t> client_id = NewIdLocked();
  if (!client_id.ok()) return client_id.status();
  GetOrCreateJobResponse response;
  response.job_id = job->id;
  response.job_client_id = *client_id;
  Iteration& iteration = job->iterations[request.iteration];
  if (!iteration.finished) iteration.clients[response.job_client_id] = now;
  return response;
}

absl::Status Dispatcher::AddTaskLocked(const Job& job, uint64_t iteration, const Worker& worker) {
  absl::StatusOr<uint64_t> id = NewIdLocked();
  if (!id.ok()) return id.status();
  JournalEvent created;
  created.kind = JournalEventKind::kTaskCreated;
  created.id = *id;
  created.job_id = job.id;
  created.iteration = iteration;
  created.worker_id = worker.id;
  return CommitLocked(created);
}

void Dispatcher::MaybeFinishLocked(Job& job, uint64_t iteration) {
  Iteration& it = job.iterations[iteration];
  if (it.finished || it.tasks.empty()) return;
  for (uint64_t id : it.tasks) {
    if (!tasks_.at(id).done) return;
  }
  it.finished = true;
  it.clients.clear();
  LogLine(absl::StrCat(JobLabel(job), " iteration ", iteration, it.error.ok() ? " finished" : " failed"));
}

void Dispatcher::ApplyTaskFinishedLocked(const JournalEvent& event) {
  auto t = tasks_.find(event.id);
  if (t == tasks_.end() || t->second.done) return;
  t->second.done = true;
  Job& job = jobs_.at(t->second.job_id);
  if (!event.error.ok()) {
    Iteration& it = job.iterations[t->second.iteration];
    if (it.error.ok()) {
      auto worker = workers_.find(event.worker_id);
      const std::string where =
          worker != workers_.end() ? worker->second.address : absl::StrCat("worker ", event.worker_id);
      it.error = absl::Status(event.error.code(), absl::StrCat(JobLabel(job), " failed on worker ", where,
                                                               ": ", event.error.message()));
      LogLine(std::string(it.error.message()));
    }
    // One failed task fails the iteration: the others' elements would be an incomplete epoch.
    for (uint64_t id : it.tasks) tasks_.at(id).done = true;
  }
  MaybeFinishLocked(job, t->second.iteration);
}

void Dispatcher::ApplyDropWorkerLocked(uint64_t worker_id, const std::string& why) {
  auto worker = workers_.find(worker_id);
  if (worker == workers_.end()) return;
  int lost = 0;
  for (auto& [id, task] : tasks_) {
    if (task.worker_id != worker_id || task.done) continue;
    task.done = true;
    task.lost = true;
    ++lost;
    MaybeFinishLocked(jobs_.at(task.job_id), task.iteration);
  }
  LogLine(absl::StrCat("worker ", worker_id, " at ", worker->second.address, " left (", why, "); ", lost,
                       " unfinished tasks end"));
  workers_.erase(worker);
}

void Dispatcher::ApplyCancelIterationLocked(Job& job, uint64_t iteration, const std::string& why) {
  auto it = job.iterations.find(iteration);
  if (it == job.iterations.end()) return;
  int cancelled = 0;
  for (uint64_t id : it->second.tasks) {
    const TaskRecord& task = tasks_.at(id);
    if (!task.done) {
      auto w = workers_.find(task.worker_id);
      if (w != workers_.end()) {
        // A task never delivered is simply not sent; a running one is stopped by its worker.
        auto undelivered = std::find(w->second.undelivered.begin(), w->second.undelivered.end(), id);
        if (undelivered != w->second.undelivered.end()) {
          w->second.undelivered.erase(undelivered);
        } else {
          w->second.cancelled.push_back(id);
        }
      }
      ++cancelled;
    }
    tasks_.erase(id);
  }
  job.iterations.erase(it);
  LogLine(absl::StrCat(JobLabel(job), " iteration ", iteration, " cancelled (", why, "); ", cancelled,
                       " unfinished tasks stop"));
}

void Dispatcher::ExpireClientsLocked(Clock::time_point now) {
  std::vector<std::pair<uint64_t, uint64_t>> abandoned;  // (job, iteration)
  for (auto& [job_id, job] : jobs_) {
    for (auto& [k, iteration] : job.iterations) {
      if (iteration.finished || iteration.clients.empty()) continue;
      std::erase_if(iteration.clients,
                    [&](const auto& client) { return now - client.second > client_timeout_; });
      if (iteration.clients.empty()) abandoned.emplace_back(job_id, k);
    }
  }
  for (const auto& [job_id, k] : abandoned) {
    // A journal failure is logged; the next request tries again.
    (void)CommitLocked(IterationCancelled(
        job_id, k, absl::StrCat("its consumers were silent for ", client_timeout_.count(), " ms")));
  }
}

void Dispatcher::ExpireWorkersLocked(Clock::time_point now) {
  std::vector<uint64_t> silent;
  for (const auto& [id, worker] : workers_) {
    if (now - worker.last_seen > worker_timeout_) silent.push_back(id);
  }
  for (uint64_t id : silent) {
    (void)CommitLocked(WorkerDropped(id, absl::StrCat("no heartbeat for ", worker_timeout_.count(), " ms")));
  }
}

absl::StatusOr<RegisterWorkerResponse> Dispatcher::RegisterWorker(const RegisterWorkerRequest& request) {
  if (request.address.empty()) return absl::InvalidArgumentError("RegisterWorker: no address");
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = now_();
  ExpireLocked(now);
  absl::StatusOr<uint64_t> id = NewIdLocked();
  if (!id.ok()) return id.status();
  JournalEvent registered;
  registered.kind = JournalEventKind::kWorkerRegistered;
  registered.id = *id;
  registered.address = request.address;
  if (absl::Status s = CommitLocked(registered); !s.ok()) return s;
  const Worker& worker = workers_.at(*id);
  for (auto& [job_id, job] : jobs_) {
    for (auto& [k, iteration] : job.iterations) {
      if (iteration.finished) continue;
      if (absl::Status s = AddTaskLocked(job, k, worker); !s.ok()) return s;
    }
  }
  return RegisterWorkerResponse{*id};
}

absl::StatusOr<WorkerHeartbeatResponse> Dispatcher::WorkerHeartbeat(const WorkerHeartbeatRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = now_();
  auto w = workers_.find(request.worker_id);
  if (w == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown worker ", request.worker_id, "; register again"));
  }
  w->second.last_seen = now;
  ExpireLocked(now);
  for (const TaskReport& report : request.reports) {
    auto t = tasks_.find(report.task_id);
    if (t == tasks_.end() || t->second.worker_id != request.worker_id || t->second.done) continue;
    JournalEvent finished;
    finished.kind = JournalEventKind::kTaskFinished;
    finished.id = report.task_id;
    finished.worker_id = request.worker_id;
    finished.error = report.error;
    if (absl::Status s = CommitLocked(finished); !s.ok()) return s;
  }
  WorkerHeartbeatResponse response;
  if (request.leaving) {
    if (absl::Status s = CommitLocked(WorkerDropped(request.worker_id, "stopping")); !s.ok()) return s;
    return response;
  }
  w = workers_.find(request.worker_id);
  if (w == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown worker ", request.worker_id, "; register again"));
  }
  for (uint64_t id : w->second.undelivered) {
    const TaskRecord& task = tasks_.at(id);
    const Job& job = jobs_.at(task.job_id);
    response.tasks.push_back(TaskDef{task.id, task.job_id, task.iteration, job.graph, job.mode});
  }
  w->second.undelivered.clear();
  response.cancelled_tasks = std::move(w->second.cancelled);
  w->second.cancelled.clear();
  for (uint64_t id : request.current_tasks) {
    auto t = tasks_.find(id);
    const bool stray = t == tasks_.end() || t->second.worker_id != request.worker_id;
    if (stray && std::find(response.cancelled_tasks.begin(), response.cancelled_tasks.end(), id) ==
                     response.cancelled_tasks.end()) {
      response.cancelled_tasks.push_back(id);
    }
  }
  return response;
}

absl::StatusOr<GetSplitResponse> Dispatcher::GetSplit(const GetSplitRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  auto t = tasks_.find(request.task_id);
  if (t == tasks_.end()) return absl::NotFoundError(absl::StrCat("GetSplit: unknown task ", request.task_id));
  Job& job = jobs_.at(t->second.job_id);
  if (!job.source) {
    return absl::FailedPreconditionError(
        absl::StrCat("GetSplit: ", JobLabel(job), " is not distributed_epoch"));
  }
  GetSplitResponse response;
  const std::vector<std::pair<uint64_t, uint64_t>>& given = t->second.splits;
  if (request.split_index < given.size()) {  // a retry: the same split again
    response.begin = given[request.split_index].first;
    response.end = given[request.split_index].second;
    return response;
  }
  if (request.split_index > given.size()) {
    return absl::FailedPreconditionError(absl::StrCat("GetSplit: task ", request.task_id, " asked for split ",
                                                      request.split_index, " after ", given.size(),
                                                      " splits"));
  }
  Iteration& it = job.iterations[t->second.iteration];
  if (it.next_split >= job.source->units || !it.error.ok() || t->second.done) {
    response.end_of_splits = true;
    return response;
  }
  JournalEvent split;
  split.kind = JournalEventKind::kSplitGiven;
  split.id = request.task_id;
  split.split_index = request.split_index;
  split.begin = static_cast<uint64_t>(it.next_split);
  split.end =
      static_cast<uint64_t>(it.next_split + std::min(job.source->chunk, job.source->units - it.next_split));
  if (absl::Status s = CommitLocked(split); !s.ok()) return s;
  response.begin = split.begin;
  response.end = split.end;
  return response;
}

absl::StatusOr<ClientHeartbeatResponse> Dispatcher::ClientHeartbeat(const ClientHeartbeatRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = now_();
  auto j = jobs_.find(request.job_id);
  if (j != jobs_.end() && request.job_client_id != 0) {
    // Before the expiry, so that this consumer's own silence does not cancel the iteration it is back for.
    auto it = j->second.iterations.find(request.iteration);
    if (it != j->second.iterations.end() && !it->second.finished) {
      if (request.releasing) {
        it->second.clients.erase(request.job_client_id);
        if (it->second.clients.empty()) {
          if (absl::Status s = CommitLocked(
                  IterationCancelled(request.job_id, request.iteration,
                                     absl::StrCat("its last consumer, ", request.job_client_id, ", left")));
              !s.ok()) {
            return s;
          }
        }
      } else {
        it->second.clients[request.job_client_id] = now;  // also a consumer dropped while others stayed
        it->second.clients.erase(0);  // a consumer is back: the restart's placeholder has served
      }
    }
  }
  ExpireLocked(now);
  if (j == jobs_.end())
    return absl::NotFoundError(
        absl::StrCat("ClientHeartbeat: unknown job ", request.job_id,
                     " (a dispatcher restarted without a work folder forgets its jobs)"));
  auto it = j->second.iterations.find(request.iteration);
  if (it == j->second.iterations.end()) {
    return absl::NotFoundError(
        absl::StrCat("ClientHeartbeat: ", JobLabel(j->second), " has no iteration ", request.iteration,
                     " (an iteration is cancelled when its consumers leave or are silent for ",
                     client_timeout_.count(), " ms)"));
  }
  ClientHeartbeatResponse response;
  for (uint64_t id : it->second.tasks) {
    const TaskRecord& task = tasks_.at(id);
    if (task.lost) continue;
    auto w = workers_.find(task.worker_id);
    if (w == workers_.end()) continue;
    response.tasks.push_back(TaskInfo{id, w->second.address});
  }
  response.finished = it->second.finished;
  response.error = it->second.error;
  return response;
}

absl::StatusOr<std::string> Dispatcher::Handle(const Frame& request) {
  switch (request.kind) {
    case FrameKind::kPing:
      return request.payload;
    case FrameKind::kGetOrCreateJob: {
      absl::StatusOr<GetOrCreateJobRequest> decoded = DecodeGetOrCreateJobRequest(request.payload);
      if (!decoded.ok()) return decoded.status();
      return Encoded(GetOrCreateJob(*decoded), &EncodeGetOrCreateJobResponse);
    }
    case FrameKind::kRegisterWorker: {
      absl::StatusOr<RegisterWorkerRequest> decoded = DecodeRegisterWorkerRequest(request.payload);
      if (!decoded.ok()) return decoded.status();
      return Encoded(RegisterWorker(*decoded), &EncodeRegisterWorkerResponse);
    }
    case FrameKind::kWorkerHeartbeat: {
      absl::StatusOr<WorkerHeartbeatRequest> decoded = DecodeWorkerHeartbeatRequest(request.payload);
      if (!decoded.ok()) return decoded.status();
      return Encoded(WorkerHeartbeat(*decoded), &EncodeWorkerHeartbeatResponse);
    }
    case FrameKind::kGetSplit: {
      absl::StatusOr<GetSplitRequest> decoded = DecodeGetSplitRequest(request.payload);
      if (!decoded.ok()) return decoded.status();
      return Encoded(GetSplit(*decoded), &EncodeGetSplitResponse);
    }
    case FrameKind::kClientHeartbeat: {
      absl::StatusOr<ClientHeartbeatRequest> decoded = DecodeClientHeartbeatRequest(request.payload);
      if (!decoded.ok()) return decoded.status();
      return Encoded(ClientHeartbeat(*decoded), &EncodeClientHeartbeatResponse);
    }
    default:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("the dispatcher does not answer ", FrameKindName(request.kind)));
}

}  // namespace sluice::service
