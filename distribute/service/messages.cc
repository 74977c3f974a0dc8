#include "distribute/service/messages.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "io/proto_wire.h"

namespace sluice::service {
namespace {

absl::Status Malformed(absl::string_view message, const wire::Reader& r) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", message, " at byte ", r.error_offset(), ": ",
                                                 r.error() ? r.error() : "unknown"));
}

absl::Status WrongType(absl::string_view message, uint32_t field, uint32_t type, const wire::Reader& r) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", message, " before byte ", r.offset(),
                                                 ": field ", field, " has wire type ", type));
}

void AppendVarintField(std::string* out, uint32_t field, uint64_t value) {
  if (value == 0) return;  // proto3 default
  wire::AppendTag(out, field, wire::kVarint);
  wire::AppendVarint(out, value);
}

void AppendStringField(std::string* out, uint32_t field, std::string_view value) {
  if (value.empty()) return;
  wire::AppendBytesField(out, field, value);
}

// Reads one message's fields, giving each known field to `on_field`, which returns false to report a
// wire-type mismatch; unknown fields are skipped.
template <class OnField>
absl::Status ReadFields(absl::string_view message, std::string_view bytes, OnField on_field) {
  wire::Reader r(bytes);
  while (!r.done()) {
    uint32_t field;
    uint32_t type;
    if (!r.ReadTag(&field, &type)) return Malformed(message, r);
    absl::StatusOr<bool> handled = on_field(r, field, type);
    if (!handled.ok()) return handled.status();
    if (!*handled && !r.Skip(type)) return Malformed(message, r);
  }
  return absl::OkStatus();
}

// Helpers that read a field of the expected wire type; a failure becomes the message's status.
absl::StatusOr<bool> ReadVarintInto(absl::string_view message, wire::Reader& r, uint32_t field, uint32_t type,
                                    uint64_t* out) {
  if (type != wire::kVarint) return WrongType(message, field, type, r);
  if (!r.ReadVarint(out)) return Malformed(message, r);
  return true;
}

// A repeated uint64 field: packed (proto3's encoding, and what Append writes) or one varint per field.
absl::StatusOr<bool> ReadRepeatedVarintsInto(absl::string_view message, wire::Reader& r, uint32_t field,
                                             uint32_t type, std::vector<uint64_t>* out) {
  if (type == wire::kVarint) {
    uint64_t value = 0;
    absl::StatusOr<bool> read = ReadVarintInto(message, r, field, type, &value);
    if (read.ok()) out->push_back(value);
    return read;
  }
  if (type != wire::kLengthDelimited) return WrongType(message, field, type, r);
  std::string_view packed;
  if (!r.ReadBytes(&packed)) return Malformed(message, r);
  wire::Reader values(packed, r.origin());
  while (!values.done()) {
    uint64_t value = 0;
    if (!values.ReadVarint(&value)) return Malformed(message, values);
    out->push_back(value);
  }
  return true;
}

void AppendPackedVarintsField(std::string* out, uint32_t field, const std::vector<uint64_t>& values) {
  if (values.empty()) return;  // proto3 default
  std::string packed;
  for (uint64_t value : values) wire::AppendVarint(&packed, value);
  wire::AppendBytesField(out, field, packed);
}

absl::StatusOr<bool> ReadBytesInto(absl::string_view message, wire::Reader& r, uint32_t field, uint32_t type,
                                   std::string* out) {
  if (type != wire::kLengthDelimited) return WrongType(message, field, type, r);
  std::string_view value;
  if (!r.ReadBytes(&value)) return Malformed(message, r);
  out->assign(value.data(), value.size());
  return true;
}

}  // namespace

std::string EncodeErrorPayload(const absl::Status& status) {
  std::string out;
  AppendVarintField(&out, 1, static_cast<uint64_t>(status.code()));
  AppendStringField(&out, 2, std::string_view(status.message().data(), status.message().size()));
  return out;
}

absl::Status DecodeErrorPayload(std::string_view bytes) {
  constexpr absl::string_view kName = "ErrorPayload";
  uint64_t code = 0;
  std::string message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &code);
        if (field == 2) return ReadBytesInto(kName, r, field, type, &message);
        return false;
      });
  if (!read.ok()) return absl::InternalError(absl::StrCat("error frame: ", read.message()));
  // Codes outside absl's range (a newer peer) keep their message but become Unknown.
  if (code == 0) return absl::InternalError(absl::StrCat("error frame with status code OK: ", message));
  const absl::StatusCode status_code = code <= static_cast<uint64_t>(absl::StatusCode::kUnauthenticated)
                                           ? static_cast<absl::StatusCode>(code)
                                           : absl::StatusCode::kUnknown;
  return absl::Status(status_code, message);
}

namespace {

void AppendStatusField(std::string* out, uint32_t field, const absl::Status& status) {
  if (status.ok()) return;
  wire::AppendBytesField(out, field, EncodeErrorPayload(status));
}

// An embedded ErrorPayload; one that does not decode (or holds OK) makes the whole message malformed.
absl::StatusOr<bool> ReadStatusInto(absl::string_view message, wire::Reader& r, uint32_t field, uint32_t type,
                                    absl::Status* out) {
  std::string bytes;
  absl::StatusOr<bool> read = ReadBytesInto(message, r, field, type, &bytes);
  if (!read.ok()) return read;
  absl::Status status = DecodeErrorPayload(bytes);
  if (status.code() == absl::StatusCode::kInternal && absl::StartsWith(status.message(), "error frame")) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", message, ": field ", field, ": ", status.message()));
  }
  *out = std::move(status);
  return true;
}

// A repeated embedded message.
template <class M, class Decode>
absl::StatusOr<bool> ReadMessageInto(absl::string_view message, wire::Reader& r, uint32_t field,
                                     uint32_t type, std::vector<M>* out, Decode decode) {
  std::string bytes;
  absl::StatusOr<bool> read = ReadBytesInto(message, r, field, type, &bytes);
  if (!read.ok()) return read;
  absl::StatusOr<M> decoded = decode(bytes);
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("in ", message, " field ", field, ": ", decoded.status().message()));
  }
  out->push_back(std::move(*decoded));
  return true;
}

absl::StatusOr<ProcessingMode> ModeFromWire(absl::string_view message, uint64_t mode) {
  if (mode > static_cast<uint64_t>(ProcessingMode::kDistributedEpoch)) {
    return absl::InvalidArgumentError(absl::StrCat(message, ": unknown processing mode ", mode));
  }
  return static_cast<ProcessingMode>(mode);
}

std::string EncodeTaskReport(const TaskReport& message) {
  std::string out;
  AppendVarintField(&out, 1, message.task_id);
  AppendStatusField(&out, 2, message.error);
  return out;
}

absl::StatusOr<TaskReport> DecodeTaskReport(std::string_view bytes) {
  constexpr absl::string_view kName = "TaskReport";
  TaskReport message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.task_id);
        if (field == 2) return ReadStatusInto(kName, r, field, type, &message.error);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeTaskDef(const TaskDef& message) {
  std::string out;
  AppendVarintField(&out, 1, message.task_id);
  AppendVarintField(&out, 2, message.job_id);
  AppendVarintField(&out, 3, message.iteration);
  AppendStringField(&out, 4, message.graph);
  AppendVarintField(&out, 5, static_cast<uint64_t>(message.mode));
  return out;
}

absl::StatusOr<TaskDef> DecodeTaskDef(std::string_view bytes) {
  constexpr absl::string_view kName = "TaskDef";
  TaskDef message;
  uint64_t mode = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.task_id);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &message.job_id);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &message.iteration);
        if (field == 4) return ReadBytesInto(kName, r, field, type, &message.graph);
        if (field == 5) return ReadVarintInto(kName, r, field, type, &mode);
        return false;
      });
  if (!read.ok()) return read;
  absl::StatusOr<ProcessingMode> checked = ModeFromWire(kName, mode);
  if (!checked.ok()) return checked.status();
  message.mode = *checked;
  return message;
}

std::string EncodeTaskInfo(const TaskInfo& message) {
  std::string out;
  AppendVarintField(&out, 1, message.task_id);
  AppendStringField(&out, 2, message.worker_address);
  return out;
}

absl::StatusOr<TaskInfo> DecodeTaskInfo(std::string_view bytes) {
  constexpr absl::string_view kName = "TaskInfo";
  TaskInfo message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.task_id);
        if (field == 2) return ReadBytesInto(kName, r, field, type, &message.worker_address);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

}  // namespace

std::string EncodeGetOrCreateJobRequest(const GetOrCreateJobRequest& message) {
  std::string out;
  AppendStringField(&out, 1, message.graph);
  AppendVarintField(&out, 2, static_cast<uint64_t>(message.mode));
  AppendStringField(&out, 3, message.job_name);
  AppendVarintField(&out, 4, message.iteration);
  AppendVarintField(&out, 5, message.job_id);
  return out;
}

absl::StatusOr<GetOrCreateJobRequest> DecodeGetOrCreateJobRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "GetOrCreateJobRequest";
  GetOrCreateJobRequest message;
  uint64_t mode = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadBytesInto(kName, r, field, type, &message.graph);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &mode);
        if (field == 3) return ReadBytesInto(kName, r, field, type, &message.job_name);
        if (field == 4) return ReadVarintInto(kName, r, field, type, &message.iteration);
        if (field == 5) return ReadVarintInto(kName, r, field, type, &message.job_id);
        return false;
      });
  if (!read.ok()) return read;
  if (mode > static_cast<uint64_t>(ProcessingMode::kDistributedEpoch)) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": unknown processing mode ", mode));
  }
  message.mode = static_cast<ProcessingMode>(mode);
  return message;
}

std::string EncodeGetOrCreateJobResponse(const GetOrCreateJobResponse& message) {
  std::string out;
  AppendVarintField(&out, 1, message.job_id);
  AppendVarintField(&out, 2, message.job_client_id);
  return out;
}

absl::StatusOr<GetOrCreateJobResponse> DecodeGetOrCreateJobResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "GetOrCreateJobResponse";
  GetOrCreateJobResponse message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.job_id);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &message.job_client_id);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeGetElementsRequest(const GetElementsRequest& message) {
  std::string out;
  AppendVarintField(&out, 1, message.job_client_id);
  AppendVarintField(&out, 2, message.max_elements);
  AppendVarintField(&out, 3, message.max_bytes);
  AppendVarintField(&out, 4, message.task_id);
  return out;
}

absl::StatusOr<GetElementsRequest> DecodeGetElementsRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "GetElementsRequest";
  GetElementsRequest message;
  uint64_t max_elements = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.job_client_id);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &max_elements);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &message.max_bytes);
        if (field == 4) return ReadVarintInto(kName, r, field, type, &message.task_id);
        return false;
      });
  if (!read.ok()) return read;
  // uint32 in the schema: libprotobuf truncates wider values, but a value that does not fit is a bug
  // in the peer, so it is refused rather than silently cut.
  if (max_elements > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, ": max_elements ", max_elements, " exceeds uint32"));
  }
  message.max_elements = static_cast<uint32_t>(max_elements);
  return message;
}

std::string EncodeGetElementsResponse(const GetElementsResponse& message) {
  std::string out;
  // Sized once: growing a multi-MiB answer by doubling copied it several times (perf: most of the time
  // of 1 MiB elements went to those copies and the page faults of their fresh buffers).
  size_t size = 32;
  for (const std::string& element : message.elements) size += element.size() + 11;
  out.reserve(size);
  // Repeated bytes: every element is written, empty ones included (they are elements).
  for (const std::string& element : message.elements) wire::AppendBytesField(&out, 1, element);
  AppendVarintField(&out, 2, message.end_of_sequence ? 1 : 0);
  AppendStatusField(&out, 3, message.error);
  return out;
}

absl::StatusOr<GetElementsResponse> DecodeGetElementsResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "GetElementsResponse";
  GetElementsResponse message;
  uint64_t end = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadBytesInto(kName, r, field, type, &message.elements.emplace_back());
        if (field == 2) return ReadVarintInto(kName, r, field, type, &end);
        if (field == 3) return ReadStatusInto(kName, r, field, type, &message.error);
        return false;
      });
  if (!read.ok()) return read;
  message.end_of_sequence = end != 0;
  return message;
}

std::string EncodeRegisterWorkerRequest(const RegisterWorkerRequest& message) {
  std::string out;
  AppendStringField(&out, 1, message.address);
  return out;
}

absl::StatusOr<RegisterWorkerRequest> DecodeRegisterWorkerRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "RegisterWorkerRequest";
  RegisterWorkerRequest message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadBytesInto(kName, r, field, type, &message.address);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeRegisterWorkerResponse(const RegisterWorkerResponse& message) {
  std::string out;
  AppendVarintField(&out, 1, message.worker_id);
  return out;
}

absl::StatusOr<RegisterWorkerResponse> DecodeRegisterWorkerResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "RegisterWorkerResponse";
  RegisterWorkerResponse message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.worker_id);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeWorkerHeartbeatRequest(const WorkerHeartbeatRequest& message) {
  std::string out;
  AppendVarintField(&out, 1, message.worker_id);
  for (const TaskReport& report : message.reports) wire::AppendBytesField(&out, 2, EncodeTaskReport(report));
  AppendVarintField(&out, 3, message.leaving ? 1 : 0);
  AppendPackedVarintsField(&out, 4, message.current_tasks);
  return out;
}

absl::StatusOr<WorkerHeartbeatRequest> DecodeWorkerHeartbeatRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "WorkerHeartbeatRequest";
  WorkerHeartbeatRequest message;
  uint64_t leaving = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.worker_id);
        if (field == 2) return ReadMessageInto(kName, r, field, type, &message.reports, &DecodeTaskReport);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &leaving);
        if (field == 4) return ReadRepeatedVarintsInto(kName, r, field, type, &message.current_tasks);
        return false;
      });
  if (!read.ok()) return read;
  message.leaving = leaving != 0;
  return message;
}

std::string EncodeWorkerHeartbeatResponse(const WorkerHeartbeatResponse& message) {
  std::string out;
  for (const TaskDef& task : message.tasks) wire::AppendBytesField(&out, 1, EncodeTaskDef(task));
  AppendPackedVarintsField(&out, 2, message.cancelled_tasks);
  return out;
}

absl::StatusOr<WorkerHeartbeatResponse> DecodeWorkerHeartbeatResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "WorkerHeartbeatResponse";
  WorkerHeartbeatResponse message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadMessageInto(kName, r, field, type, &message.tasks, &DecodeTaskDef);
        if (field == 2) return ReadRepeatedVarintsInto(kName, r, field, type, &message.cancelled_tasks);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeGetSplitRequest(const GetSplitRequest& message) {
  std::string out;
  AppendVarintField(&out, 1, message.task_id);
  AppendVarintField(&out, 2, message.split_index);
  return out;
}

absl::StatusOr<GetSplitRequest> DecodeGetSplitRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "GetSplitRequest";
  GetSplitRequest message;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.task_id);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &message.split_index);
        return false;
      });
  if (!read.ok()) return read;
  return message;
}

std::string EncodeGetSplitResponse(const GetSplitResponse& message) {
  std::string out;
  AppendVarintField(&out, 1, message.begin);
  AppendVarintField(&out, 2, message.end);
  AppendVarintField(&out, 3, message.end_of_splits ? 1 : 0);
  return out;
}

absl::StatusOr<GetSplitResponse> DecodeGetSplitResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "GetSplitResponse";
  GetSplitResponse message;
  uint64_t end_of_splits = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.begin);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &message.end);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &end_of_splits);
        return false;
      });
  if (!read.ok()) return read;
  message.end_of_splits = end_of_splits != 0;
  return message;
}

std::string EncodeClientHeartbeatRequest(const ClientHeartbeatRequest& message) {
  std::string out;
  AppendVarintField(&out, 1, message.job_id);
  AppendVarintField(&out, 2, message.iteration);
  AppendVarintField(&out, 3, message.job_client_id);
  AppendVarintField(&out, 4, message.releasing ? 1 : 0);
  return out;
}

absl::StatusOr<ClientHeartbeatRequest> DecodeClientHeartbeatRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "ClientHeartbeatRequest";
  ClientHeartbeatRequest message;
  uint64_t releasing = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &message.job_id);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &message.iteration);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &message.job_client_id);
        if (field == 4) return ReadVarintInto(kName, r, field, type, &releasing);
        return false;
      });
  if (!read.ok()) return read;
  message.releasing = releasing != 0;
  return message;
}

std::string EncodeClientHeartbeatResponse(const ClientHeartbeatResponse& message) {
  std::string out;
  for (const TaskInfo& task : message.tasks) wire::AppendBytesField(&out, 1, EncodeTaskInfo(task));
  AppendVarintField(&out, 2, message.finished ? 1 : 0);
  AppendStatusField(&out, 3, message.error);
  return out;
}

absl::StatusOr<ClientHeartbeatResponse> DecodeClientHeartbeatResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "ClientHeartbeatResponse";
  ClientHeartbeatResponse message;
  uint64_t finished = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadMessageInto(kName, r, field, type, &message.tasks, &DecodeTaskInfo);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &finished);
        if (field == 3) return ReadStatusInto(kName, r, field, type, &message.error);
        return false;
      });
  if (!read.ok()) return read;
  message.finished = finished != 0;
  return message;
}

const char* ProcessingModeName(ProcessingMode mode) {
  switch (mode) {
    case ProcessingMode::kParallelEpochs:
      return "parallel_epochs";
    case ProcessingMode::kDistributedEpoch:
      return "distributed_epoch";
    case ProcessingMode::kUnspecified:
      break;
  }
  return "unspecified";
}

std::string EncodeAgreementRoundRequest(const AgreementRoundRequest& message) {
  std::string out;
  AppendStringField(&out, 1, message.agreement);
  AppendVarintField(&out, 2, message.num_workers);
  AppendVarintField(&out, 3, message.worker);
  AppendVarintField(&out, 4, message.epoch);
  AppendVarintField(&out, 5, message.step);
  AppendVarintField(&out, 6, message.mine ? 1 : 0);
  return out;
}

absl::StatusOr<AgreementRoundRequest> DecodeAgreementRoundRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "AgreementRoundRequest";
  AgreementRoundRequest message;
  uint64_t num_workers = 0, worker = 0, mine = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadBytesInto(kName, r, field, type, &message.agreement);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &num_workers);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &worker);
        if (field == 4) return ReadVarintInto(kName, r, field, type, &message.epoch);
        if (field == 5) return ReadVarintInto(kName, r, field, type, &message.step);
        if (field == 6) return ReadVarintInto(kName, r, field, type, &mine);
        return false;
      });
  if (!read.ok()) return read;
  if (num_workers > UINT32_MAX || worker > UINT32_MAX) {
    return absl::InvalidArgumentError("AgreementRoundRequest: worker count or index out of range");
  }
  message.num_workers = static_cast<uint32_t>(num_workers);
  message.worker = static_cast<uint32_t>(worker);
  message.mine = mine != 0;
  return message;
}

std::string EncodeAgreementRoundResponse(const AgreementRoundResponse& message) {
  std::string out;
  AppendVarintField(&out, 1, message.any ? 1 : 0);
  return out;
}

absl::StatusOr<AgreementRoundResponse> DecodeAgreementRoundResponse(std::string_view bytes) {
  constexpr absl::string_view kName = "AgreementRoundResponse";
  uint64_t any = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadVarintInto(kName, r, field, type, &any);
        return false;
      });
  if (!read.ok()) return read;
  return AgreementRoundResponse{any != 0};
}

std::string EncodeAgreementAbandonRequest(const AgreementAbandonRequest& message) {
  std::string out;
  AppendStringField(&out, 1, message.agreement);
  AppendVarintField(&out, 2, message.num_workers);
  AppendVarintField(&out, 3, message.worker);
  AppendVarintField(&out, 4, message.epoch);
  return out;
}

absl::StatusOr<AgreementAbandonRequest> DecodeAgreementAbandonRequest(std::string_view bytes) {
  constexpr absl::string_view kName = "AgreementAbandonRequest";
  AgreementAbandonRequest message;
  uint64_t num_workers = 0, worker = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        if (field == 1) return ReadBytesInto(kName, r, field, type, &message.agreement);
        if (field == 2) return ReadVarintInto(kName, r, field, type, &num_workers);
        if (field == 3) return ReadVarintInto(kName, r, field, type, &worker);
        if (field == 4) return ReadVarintInto(kName, r, field, type, &message.epoch);
        return false;
      });
  if (!read.ok()) return read;
  if (num_workers > UINT32_MAX || worker > UINT32_MAX) {
    return absl::InvalidArgumentError("AgreementAbandonRequest: worker count or index out of range");
  }
  message.num_workers = static_cast<uint32_t>(num_workers);
  message.worker = static_cast<uint32_t>(worker);
  return message;
}

std::string EncodeJournalEvent(const JournalEvent& message) {
  std::string out;
  AppendVarintField(&out, 1, static_cast<uint64_t>(message.kind));
  AppendVarintField(&out, 2, message.id);
  AppendVarintField(&out, 3, message.job_id);
  AppendVarintField(&out, 4, message.iteration);
  AppendVarintField(&out, 5, message.worker_id);
  AppendStringField(&out, 6, message.name);
  AppendStringField(&out, 7, message.graph);
  AppendVarintField(&out, 8, static_cast<uint64_t>(message.mode));
  AppendStringField(&out, 9, message.address);
  AppendStatusField(&out, 10, message.error);
  AppendVarintField(&out, 11, message.split_index);
  AppendVarintField(&out, 12, message.begin);
  AppendVarintField(&out, 13, message.end);
  AppendStringField(&out, 14, message.reason);
  return out;
}

absl::StatusOr<JournalEvent> DecodeJournalEvent(std::string_view bytes) {
  constexpr absl::string_view kName = "JournalEvent";
  JournalEvent message;
  uint64_t kind = 0;
  uint64_t mode = 0;
  absl::Status read =
      ReadFields(kName, bytes, [&](wire::Reader& r, uint32_t field, uint32_t type) -> absl::StatusOr<bool> {
        switch (field) {
          case 1:
            return ReadVarintInto(kName, r, field, type, &kind);
          case 2:
            return ReadVarintInto(kName, r, field, type, &message.id);
          case 3:
            return ReadVarintInto(kName, r, field, type, &message.job_id);
          case 4:
            return ReadVarintInto(kName, r, field, type, &message.iteration);
          case 5:
            return ReadVarintInto(kName, r, field, type, &message.worker_id);
          case 6:
            return ReadBytesInto(kName, r, field, type, &message.name);
          case 7:
            return ReadBytesInto(kName, r, field, type, &message.graph);
          case 8:
            return ReadVarintInto(kName, r, field, type, &mode);
          case 9:
            return ReadBytesInto(kName, r, field, type, &message.address);
          case 10:
            return ReadStatusInto(kName, r, field, type, &message.error);
          case 11:
            return ReadVarintInto(kName, r, field, type, &message.split_index);
          case 12:
            return ReadVarintInto(kName, r, field, type, &message.begin);
          case 13:
            return ReadVarintInto(kName, r, field, type, &message.end);
          case 14:
            return ReadBytesInto(kName, r, field, type, &message.reason);
          default:
            return false;
        }
      });
  if (!read.ok()) return read;
  if (kind == 0 || kind > static_cast<uint64_t>(JournalEventKind::kSplitGiven)) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": unknown kind ", kind));
  }
  message.kind = static_cast<JournalEventKind>(kind);
  absl::StatusOr<ProcessingMode> checked = ModeFromWire(kName, mode);
  if (!checked.ok()) return checked.status();
  message.mode = *checked;
  return message;
}

}  // namespace sluice::service
