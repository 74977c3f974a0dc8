// Internal: the data service's control messages, in protocol-buffer wire format (schema:
// docs/service.proto), written and read with io/proto_wire.h; libprotobuf is not linked.
//
// Contract:
// - EncodeX(message) returns canonical bytes: fields in number order, defaults (0, empty) omitted, as
//   libprotobuf writes proto3.
// - DecodeX(bytes) accepts any valid encoding of the schema: fields in any order, unknown fields skipped
//   (a newer peer may add some), a repeated scalar's last value wins. Malformed bytes (truncation, bad
//   tags, groups, a field with the wrong wire type, an out-of-range enum) give InvalidArgument naming the
//   message, the field and the byte offset; decoding never reads out of bounds, and what it allocates is a
//   small multiple of the input's size (which the frame limit bounds).
// - Threading: plain functions over values.
//
//   std::string bytes = EncodeGetOrCreateJobRequest({.graph = *sluice::Serialize(ds),
//                                                    .mode = ProcessingMode::kParallelEpochs});
//   absl::StatusOr<GetOrCreateJobRequest> request = DecodeGetOrCreateJobRequest(bytes);
#ifndef SLUICE_DISTRIBUTE_SERVICE_MESSAGES_H_
#define SLUICE_DISTRIBUTE_SERVICE_MESSAGES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/distribute/service_mode.h"

namespace sluice::service {

// The payload of an error frame: an absl::Status.
struct ErrorPayload {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  std::string message;
};

// Client -> dispatcher: join the job named `job_name`, or create it (a fresh anonymous job when unnamed).
struct GetOrCreateJobRequest {
  std::string graph;  // sluice::Serialize bytes of the pipeline before Distribute
  ProcessingMode mode = ProcessingMode::kUnspecified;
  std::string job_name;
  uint64_t iteration = 0;  // the consumer's pass over the dataset: pass k reads iteration k
  uint64_t job_id = 0;     // nonzero: the unnamed job this consumer's earlier passes read
};

struct GetOrCreateJobResponse {
  uint64_t job_id = 0;
  uint64_t job_client_id = 0;  // names this consumer in GetElements
};

// Client -> worker: up to `max_elements` elements (at least one unless the stream ended), at most
// `max_bytes` of them in total unless a single element is larger.
struct GetElementsRequest {
  uint64_t job_client_id = 0;
  uint32_t max_elements = 0;
  uint64_t max_bytes = 0;
  uint64_t task_id = 0;  // the worker's task to read
};

struct GetElementsResponse {
  std::vector<std::string> elements;  // element-codec bytes, in order
  bool end_of_sequence = false;       // no element follows those above
  absl::Status error;                 // not OK: an error element that follows the elements above
};

// Worker -> dispatcher: a worker joins, giving the address clients reach it at.
struct RegisterWorkerRequest {
  std::string address;
};
struct RegisterWorkerResponse {
  uint64_t worker_id = 0;
};

// A task the worker finished: every element handed out (error OK), or it could not run (error).
struct TaskReport {
  uint64_t task_id = 0;
  absl::Status error;
};
// Worker -> dispatcher, periodically: what finished; the answer holds the tasks new to this worker.
struct WorkerHeartbeatRequest {
  uint64_t worker_id = 0;
  std::vector<TaskReport> reports;
  bool leaving = false;  // the worker is stopping: drop it now, its unfinished tasks end
  // Every task the worker holds (running or not yet drained): the answer cancels those the dispatcher no
  // longer knows (a dispatcher restarted without its journal, or an iteration cancelled meanwhile).
  std::vector<uint64_t> current_tasks;
};
struct TaskDef {
  uint64_t task_id = 0;
  uint64_t job_id = 0;
  uint64_t iteration = 0;
  std::string graph;
  ProcessingMode mode = ProcessingMode::kUnspecified;
};
struct WorkerHeartbeatResponse {
  std::vector<TaskDef> tasks;
  std::vector<uint64_t> cancelled_tasks;  // tasks whose consumers all left: stop them and drop their data
};

// Worker -> dispatcher (distributed_epoch): a task's next split, indices [begin, end) of the splittable
// source (elements of a Range or FromVector, files of a file source), or the end of the splits.
struct GetSplitRequest {
  uint64_t task_id = 0;
  // Which of the task's splits this is (0, 1, ...): asking again for one already handed out (a retry after
  // the answer was lost, or after the dispatcher restarted) gives the same split again.
  uint64_t split_index = 0;
};
struct GetSplitResponse {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool end_of_splits = false;
};

// Client -> dispatcher: where iteration `iteration` of a job is read from, and whether it is over.
struct ClientHeartbeatRequest {
  uint64_t job_id = 0;
  uint64_t iteration = 0;
  uint64_t job_client_id = 0;  // GetOrCreateJobResponse.job_client_id: keeps this consumer registered
  bool releasing = false;      // the consumer is done with the iteration (its last heartbeat)
};
struct TaskInfo {
  uint64_t task_id = 0;
  std::string worker_address;
};
struct ClientHeartbeatResponse {
  std::vector<TaskInfo> tasks;
  bool finished = false;  // every task listed ended on its worker: once they are drained, the iteration ends
  absl::Status error;     // the iteration failed (a worker could not run its task)
};

// Trainer -> dispatcher: one step of a multi-worker end-of-data agreement (sluice::WorkerAgreement)
// named `agreement` among `num_workers` trainers; answered once every worker arrived for that step.
struct AgreementRoundRequest {
  std::string agreement;
  uint32_t num_workers = 0;
  uint32_t worker = 0;
  uint64_t epoch = 0;
  uint64_t step = 0;
  bool mine = false;  // this worker has data for the step
};
struct AgreementRoundResponse {
  bool any = false;  // some worker has
};
// Trainer -> dispatcher: worker `worker` leaves `epoch` before its end was agreed (answered empty).
struct AgreementAbandonRequest {
  std::string agreement;
  uint32_t num_workers = 0;
  uint32_t worker = 0;
  uint64_t epoch = 0;
};

// The dispatcher's journal (distribute/service/journal.h): one event per state change, replayed on
// restart. Which fields a kind uses is listed beside it.
enum class JournalEventKind : uint32_t {
  kUnspecified = 0,
  kIdsReserved = 1,         // id: ids below it may be in use (reserved in blocks)
  kJobCreated = 2,          // id, name, graph, mode
  kIterationStarted = 3,    // job_id, iteration
  kWorkerRegistered = 4,    // id, address
  kTaskCreated = 5,         // id, job_id, iteration, worker_id
  kTaskFinished = 6,        // id, worker_id, error (OK: every element handed out)
  kWorkerDropped = 7,       // id, reason
  kIterationCancelled = 8,  // job_id, iteration, reason
  kSplitGiven = 9,          // id (the task), split_index, begin, end
};
struct JournalEvent {
  JournalEventKind kind = JournalEventKind::kUnspecified;
  uint64_t id = 0;
  uint64_t job_id = 0;
  uint64_t iteration = 0;
  uint64_t worker_id = 0;
  std::string name;
  std::string graph;
  ProcessingMode mode = ProcessingMode::kUnspecified;
  std::string address;
  absl::Status error;
  uint64_t split_index = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string reason;  // why, for the log line replay does not print
};
std::string EncodeJournalEvent(const JournalEvent& message);
absl::StatusOr<JournalEvent> DecodeJournalEvent(std::string_view bytes);

std::string EncodeAgreementRoundRequest(const AgreementRoundRequest& message);
absl::StatusOr<AgreementRoundRequest> DecodeAgreementRoundRequest(std::string_view bytes);
std::string EncodeAgreementRoundResponse(const AgreementRoundResponse& message);
absl::StatusOr<AgreementRoundResponse> DecodeAgreementRoundResponse(std::string_view bytes);
std::string EncodeAgreementAbandonRequest(const AgreementAbandonRequest& message);
absl::StatusOr<AgreementAbandonRequest> DecodeAgreementAbandonRequest(std::string_view bytes);

std::string EncodeErrorPayload(const absl::Status& status);
// The status an error frame carries. A payload that does not decode, or carries code OK (an error frame
// must fail), gives an Internal status that says so.
absl::Status DecodeErrorPayload(std::string_view bytes);

std::string EncodeGetOrCreateJobRequest(const GetOrCreateJobRequest& message);
absl::StatusOr<GetOrCreateJobRequest> DecodeGetOrCreateJobRequest(std::string_view bytes);
std::string EncodeGetOrCreateJobResponse(const GetOrCreateJobResponse& message);
absl::StatusOr<GetOrCreateJobResponse> DecodeGetOrCreateJobResponse(std::string_view bytes);
std::string EncodeGetElementsRequest(const GetElementsRequest& message);
absl::StatusOr<GetElementsRequest> DecodeGetElementsRequest(std::string_view bytes);
std::string EncodeGetElementsResponse(const GetElementsResponse& message);
absl::StatusOr<GetElementsResponse> DecodeGetElementsResponse(std::string_view bytes);
std::string EncodeRegisterWorkerRequest(const RegisterWorkerRequest& message);
absl::StatusOr<RegisterWorkerRequest> DecodeRegisterWorkerRequest(std::string_view bytes);
std::string EncodeRegisterWorkerResponse(const RegisterWorkerResponse& message);
absl::StatusOr<RegisterWorkerResponse> DecodeRegisterWorkerResponse(std::string_view bytes);
std::string EncodeWorkerHeartbeatRequest(const WorkerHeartbeatRequest& message);
absl::StatusOr<WorkerHeartbeatRequest> DecodeWorkerHeartbeatRequest(std::string_view bytes);
std::string EncodeWorkerHeartbeatResponse(const WorkerHeartbeatResponse& message);
absl::StatusOr<WorkerHeartbeatResponse> DecodeWorkerHeartbeatResponse(std::string_view bytes);
std::string EncodeGetSplitRequest(const GetSplitRequest& message);
absl::StatusOr<GetSplitRequest> DecodeGetSplitRequest(std::string_view bytes);
std::string EncodeGetSplitResponse(const GetSplitResponse& message);
absl::StatusOr<GetSplitResponse> DecodeGetSplitResponse(std::string_view bytes);
std::string EncodeClientHeartbeatRequest(const ClientHeartbeatRequest& message);
absl::StatusOr<ClientHeartbeatRequest> DecodeClientHeartbeatRequest(std::string_view bytes);
std::string EncodeClientHeartbeatResponse(const ClientHeartbeatResponse& message);
absl::StatusOr<ClientHeartbeatResponse> DecodeClientHeartbeatResponse(std::string_view bytes);

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_MESSAGES_H_
