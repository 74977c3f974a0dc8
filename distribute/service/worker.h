// Internal: a data-service worker: registers with the dispatcher, receives tasks in heartbeat answers,
// rebuilds each task's pipeline from its graph and serves its elements.
//
// Contract:
// - Each task's pipeline is rebuilt with this process's registrations (sluice/ops/graph.h); a missing
//   one fails the task, and the dispatcher fails the job with the message, which names the op, its path
//   and the registration needed. In distributed_epoch the splittable source is read split by split, each
//   split asked of the dispatcher on demand (sluice/ops/split_reader.h).
// - Pipelines run on the worker's one pool (`threads`), shared by all its tasks; a producer thread per
//   task pulls elements and keeps at most max_buffered_elements / max_buffered_bytes encoded elements
//   (one element may exceed the bytes) until consumers take them.
// - GetElements(task) never waits: it answers with what is buffered (up to max_elements and, past the
//   first, max_bytes), an error element, end_of_sequence once the task ended and is drained, or nothing
//   yet. Several consumers share a task first come, first served. A task this worker has not received yet
//   answers empty; one it finished answers end_of_sequence (or its error).
// - A task drained (or failed) is reported finished in the next heartbeat.
// - Stop(): stops the heartbeat, every producer (their pipelines see the stop) and the server, with
//   clients connected or not; joins everything. Idempotent.
#ifndef SLUICE_DISTRIBUTE_SERVICE_WORKER_H_
#define SLUICE_DISTRIBUTE_SERVICE_WORKER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sluice/distribute/service.h"

namespace sluice::service {

class Worker {
 public:
  static absl::StatusOr<std::unique_ptr<Worker>> Start(WorkerConfig config);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();
  std::string address() const;
  void Stop();

  struct Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_WORKER_H_
