#include "distribute/service/dispatcher.h"

#include <algorithm>
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

}  // namespace

Dispatcher::Dispatcher(int64_t worker_timeout_ms, Log log, Now now, int64_t client_timeout_ms)
    : worker_timeout_(worker_timeout_ms),
      client_timeout_(client_timeout_ms),
      log_(std::move(log)),
      now_(std::move(now)) {}

void Dispatcher::LogLine(const std::string& line) const {
  if (log_) log_(line);
}

std::string Dispatcher::JobLabel(const Job& job) const {
  return job.name.empty() ? absl::StrCat("job ", job.id) : absl::StrCat("job ", job.id, " '", job.name, "'");
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
    std::optional<SplittableSource> source;
    if (request.mode == ProcessingMode::kDistributedEpoch) {
      absl::StatusOr<SplittableSource> found = FindSplittableSource(*graph);
      if (!found.ok()) return found.status();
      source = std::move(*found);
    }
    const uint64_t id = next_id_++;
    Job& created = jobs_[id];
    created.id = id;
    created.name = request.job_name;
    created.graph = request.graph;
    created.element_type = graph->element_type;
    created.fingerprint = fingerprint;
    created.mode = request.mode;
    created.source = std::move(source);
    if (!created.name.empty()) jobs_by_name_[created.name] = id;
    job = &created;
    std::string line =
        absl::StrCat(JobLabel(created), " created: ", ProcessingModeName(created.mode), ", yields ",
                     created.element_type, ", fingerprint ", FingerprintHex(fingerprint));
    if (created.source) {
      absl::StrAppend(&line, ", splits ", created.source->op, " at ", created.source->path_text, " (",
                      created.source->units, created.source->files ? " files)" : " elements)");
    }
    LogLine(line);
  }
  if (!job->iterations.contains(request.iteration)) {
    job->iterations[request.iteration];
    for (auto& [id, worker] : workers_) AddTaskLocked(*job, request.iteration, worker);
    LogLine(absl::StrCat(JobLabel(*job), " iteration ", request.iteration, " started with ",
                         job->iterations[request.iteration].tasks.size(), " tasks"));
  }
  GetOrCreateJobResponse response;
  response.job_id = job->id;
  response.job_client_id = next_id_++;
  Iteration& iteration = job->iterations[request.iteration];
  if (!iteration.finished) iteration.clients[response.job_client_id] = now;
  return response;
}

void Dispatcher::AddTaskLocked(Job& job, uint64_t iteration, Worker& worker) {
  const uint64_t id = next_id_++;
  TaskRecord& task = tasks_[id];
  task.id = id;
  task.job_id = job.id;
  task.iteration = iteration;
  task.worker_id = worker.id;
  job.iterations[iteration].tasks.push_back(id);
  worker.undelivered.push_back(id);
}

void Dispatcher::MaybeFinishLocked(Job& job, uint64_t iteration) {
  Iteration& it = job.iterations[iteration];
  if (it.finished || it.tasks.empty()) return;
  for (uint64_t id : it.tasks) {
    if (!tasks_.at(id).done) return;
  }
  it.finished = true;
  LogLine(absl::StrCat(JobLabel(job), " iteration ", iteration, it.error.ok() ? " finished" : " failed"));
}

void Dispatcher::DropWorkerLocked(std::map<uint64_t, Worker>::iterator worker, const std::string& why) {
  int lost = 0;
  for (auto& [id, task] : tasks_) {
    if (task.worker_id != worker->first || task.done) continue;
    task.done = true;
    task.lost = true;
    ++lost;
    MaybeFinishLocked(jobs_.at(task.job_id), task.iteration);
  }
  LogLine(absl::StrCat("worker ", worker->first, " at ", worker->second.address, " left (", why, "); ", lost,
                       " unfinished tasks end"));
  workers_.erase(worker);
}

void Dispatcher::CancelIterationLocked(Job& job, uint64_t iteration, const std::string& why) {
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
    CancelIterationLocked(jobs_.at(job_id), k,
                          absl::StrCat("its consumers were silent for ", client_timeout_.count(), " ms"));
  }
}

void Dispatcher::ExpireWorkersLocked(Clock::time_point now) {
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto next = std::next(it);
    if (now - it->second.last_seen > worker_timeout_) {
      DropWorkerLocked(it, absl::StrCat("no heartbeat for ", worker_timeout_.count(), " ms"));
    }
    it = next;
  }
}

absl::StatusOr<RegisterWorkerResponse> Dispatcher::RegisterWorker(const RegisterWorkerRequest& request) {
  if (request.address.empty()) return absl::InvalidArgumentError("RegisterWorker: no address");
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = now_();
  ExpireLocked(now);
  const uint64_t id = next_id_++;
  Worker& worker = workers_[id];
  worker.id = id;
  worker.address = request.address;
  worker.last_seen = now;
  for (auto& [job_id, job] : jobs_) {
    for (auto& [k, iteration] : job.iterations) {
      if (!iteration.finished) AddTaskLocked(job, k, worker);
    }
  }
  LogLine(absl::StrCat("worker ", id, " joined from ", request.address));
  return RegisterWorkerResponse{id};
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
    t->second.done = true;
    Job& job = jobs_.at(t->second.job_id);
    if (!report.error.ok()) {
      Iteration& it = job.iterations[t->second.iteration];
      if (it.error.ok()) {
        it.error =
            absl::Status(report.error.code(), absl::StrCat(JobLabel(job), " failed on worker ",
                                                           w->second.address, ": ", report.error.message()));
        LogLine(std::string(it.error.message()));
      }
      // One failed task fails the iteration: the others' elements would be an
      // incomplete epoch.
      for (uint64_t id : it.tasks) tasks_.at(id).done = true;
    }
    MaybeFinishLocked(job, t->second.iteration);
  }
  WorkerHeartbeatResponse response;
  if (request.leaving) {
    DropWorkerLocked(w, "stopping");
    return response;
  }
  for (uint64_t id : w->second.undelivered) {
    const TaskRecord& task = tasks_.at(id);
    const Job& job = jobs_.at(task.job_id);
    response.tasks.push_back(TaskDef{task.id, task.job_id, task.iteration, job.graph, job.mode});
  }
  w->second.undelivered.clear();
  response.cancelled_tasks = std::move(w->second.cancelled);
  w->second.cancelled.clear();
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
  Iteration& it = job.iterations[t->second.iteration];
  GetSplitResponse response;
  if (it.next_split >= job.source->units || !it.error.ok() || t->second.done) {
    response.end_of_splits = true;
    return response;
  }
  response.begin = static_cast<uint64_t>(it.next_split);
  it.next_split += std::min(job.source->chunk, job.source->units - it.next_split);  // never past units
  response.end = static_cast<uint64_t>(it.next_split);
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
          CancelIterationLocked(j->second, request.iteration,
                                absl::StrCat("its last consumer, ", request.job_client_id, ", left"));
        }
      } else {
        it->second.clients[request.job_client_id] = now;  // also a consumer dropped while others stayed
      }
    }
  }
  ExpireLocked(now);
  if (j == jobs_.end())
    return absl::NotFoundError(absl::StrCat("ClientHeartbeat: unknown job ", request.job_id));
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
