// Internal: the data service's dispatcher: the job registry, the workers, and the splits of
// distributed_epoch jobs. It reads pipelines only as untyped graphs and never runs them.
//
// Contract:
// - GetOrCreateJob: a named job is created by its first request and joined by the later ones, which must
//   name the same element type, mode and dataset (fingerprint), else InvalidArgument naming both sides;
//   an unnamed request creates a job of its own, or (job_id set) continues that consumer's job. Pass k of
//   a consumer joins iteration k, created at its first request with one task per live worker. Graphs
//   that do not parse, hold internal ops, or (distributed_epoch) lack exactly one splittable source are
//   refused, naming the ops.
// - Workers register, then heartbeat: a heartbeat reports finished or failed tasks and receives the
//   tasks created for the worker since. A worker joining later gets a task in every unfinished iteration.
//   A worker silent for `worker_timeout_ms` is dropped; its unfinished tasks end (their data is lost).
//   A failed task fails its iteration with the worker's message.
// - GetSplit hands a task's iteration its next split, on demand, each split once; then end_of_splits.
// - ClientHeartbeat: an iteration's tasks (with worker addresses), whether every task finished, and the
//   error of a failed task (then the iteration is over). It also keeps its consumer (job_client_id)
//   registered with the iteration; `releasing` unregisters it.
// - Consumers leaving: a consumer unregisters when it releases or after `client_timeout_ms` without a
//   heartbeat. An unfinished iteration without consumers is cancelled: its unfinished tasks go to their
//   workers' next heartbeat answers as cancelled_tasks, and its record is dropped, so a later consumer
//   of it (same job name and iteration) starts it afresh. Finished iterations are kept (a late
//   consumer of a finished one sees end of input at once).
// - GetSplit: a task's split k is handed out once; asking for k again (a retry) gives the same split.
// - Journal (Recover): every state change is an event (messages.h, JournalEvent) appended to the journal
//   before it is applied, so what an answer reported is on disk first. Recover replays a journal: jobs,
//   iterations, tasks, splits and workers come back; restored workers get `worker_timeout_ms` to
//   heartbeat again (and are sent their unfinished tasks again, which they ignore when they hold them);
//   unfinished iterations wait `client_timeout_ms` for a consumer to come back. Consumers' registrations
//   are not journaled. A journal append that fails fails its request (Internal) and changes nothing.
//   Without Recover there is no journal.
// - A worker heartbeat lists the tasks the worker holds; those the dispatcher does not know are sent back
//   as cancelled (a restart without journal, an iteration cancelled meanwhile).
// - Threading: every member is thread-safe (one mutex); the server runs Handle() on its handler pool.
#ifndef SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_H_
#define SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "distribute/service/frame.h"
#include "distribute/service/journal.h"
#include "distribute/service/messages.h"
#include "distribute/service/split_source.h"
#include "sluice/engine/task.h"

namespace sluice::service {

class Dispatcher {
 public:
  using Clock = std::chrono::steady_clock;
  using Log = std::function<void(const std::string&)>;

  using Now = std::function<Clock::time_point()>;

  // `now`: the clock worker and consumer timeouts are measured with (tests pass a fake one).
  Dispatcher(int64_t worker_timeout_ms, Log log, Now now = &Clock::now, int64_t client_timeout_ms = 60000);

  // Replays `replay` (the journal's records, oldest first), then journals every later change to
  // `journal`. Call once, before serving. A record that does not decode or apply is DataLoss naming it.
  absl::Status Recover(std::unique_ptr<Journal> journal, const std::vector<std::string>& replay);

  absl::StatusOr<GetOrCreateJobResponse> GetOrCreateJob(const GetOrCreateJobRequest& request);
  absl::StatusOr<RegisterWorkerResponse> RegisterWorker(const RegisterWorkerRequest& request);
  absl::StatusOr<WorkerHeartbeatResponse> WorkerHeartbeat(const WorkerHeartbeatRequest& request);
  absl::StatusOr<GetSplitResponse> GetSplit(const GetSplitRequest& request);
  absl::StatusOr<ClientHeartbeatResponse> ClientHeartbeat(const ClientHeartbeatRequest& request);

  // Decodes a request frame, answers it, encodes the answer.
  absl::StatusOr<std::string> Handle(const Frame& request);

 private:
  struct TaskRecord {
    uint64_t id = 0;
    uint64_t job_id = 0;
    uint64_t iteration = 0;
    uint64_t worker_id = 0;
    bool done = false;
    bool lost = false;  // its worker left before it finished
    std::vector<std::pair<uint64_t, uint64_t>> splits;  // [begin, end) of split k, as handed out
  };
  struct Iteration {
    std::vector<uint64_t> tasks;
    int64_t next_split = 0;  // next unit handed out (distributed_epoch)
    bool finished = false;
    absl::Status error;
    std::map<uint64_t, Clock::time_point> clients;  // job_client_id -> its last request
  };
  struct Job {
    uint64_t id = 0;
    std::string name;
    std::string graph;
    std::string element_type;
    uint64_t fingerprint = 0;
    ProcessingMode mode = ProcessingMode::kUnspecified;
    std::optional<SplittableSource> source;
    std::map<uint64_t, Iteration> iterations;
  };
  struct Worker {
    uint64_t id = 0;
    std::string address;
    Clock::time_point last_seen;
    std::vector<uint64_t> undelivered;  // tasks not yet sent in a heartbeat answer
    std::vector<uint64_t> cancelled;    // delivered tasks to stop, not yet sent in a heartbeat answer
  };

  std::string JobLabel(const Job& job) const;
  // Journals the event (when there is a journal and this is not a replay), then applies it.
  absl::Status CommitLocked(const JournalEvent& event);
  // The one place state changes; replay and live requests both come here.
  absl::Status ApplyLocked(const JournalEvent& event);
  // A fresh id; journals a new block of reserved ids when the last one is used up.
  absl::StatusOr<uint64_t> NewIdLocked();
  // Commits a task of `iteration` for every worker (a new iteration), or of every unfinished iteration for
  // one worker (a new worker).
  absl::Status AddTaskLocked(const Job& job, uint64_t iteration, const Worker& worker);
  void MaybeFinishLocked(Job& job, uint64_t iteration);
  void ExpireWorkersLocked(Clock::time_point now);
  // Drops consumers silent for client_timeout_ms, then cancels unfinished iterations left without one.
  void ExpireClientsLocked(Clock::time_point now);
  // Both expiries: every request runs them, so no timer thread is needed.
  void ExpireLocked(Clock::time_point now) {
    ExpireWorkersLocked(now);
    ExpireClientsLocked(now);
  }
  // Appliers. Cancel: ends the iteration's unfinished tasks (their workers are told to stop them) and
  // drops its record. Drop: the worker's unfinished tasks end (their elements are lost). Both log why.
  void ApplyCancelIterationLocked(Job& job, uint64_t iteration, const std::string& why);
  void ApplyDropWorkerLocked(uint64_t worker_id, const std::string& why);
  void ApplyTaskFinishedLocked(const JournalEvent& event);
  void LogLine(const std::string& line) const;

  const std::chrono::milliseconds worker_timeout_;
  const std::chrono::milliseconds client_timeout_;
  const Log log_;
  const Now now_;
  std::mutex mu_;
  std::unique_ptr<Journal> journal_;  // null: none
  bool replaying_ = false;            // Recover is applying the journal: no appends, no log lines
  // Jobs, workers, tasks and clients share one counter, so no two ids are ever the same, also across a
  // restart: with a journal, ids below reserved_until_ are journaled as possibly used; without one, each
  // dispatcher starts at a random id, so a worker or consumer from before a restart cannot pass for a
  // new one (its stale ids are unknown, not someone else's).
  uint64_t next_id_;
  uint64_t reserved_until_ = 0;
  std::map<uint64_t, Job> jobs_;
  std::map<std::string, uint64_t> jobs_by_name_;
  std::map<uint64_t, Worker> workers_;
  std::map<uint64_t, TaskRecord> tasks_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_DISPATCHER_H_
