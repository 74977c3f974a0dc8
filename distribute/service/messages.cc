#include "distribute/service/messages.h"

#include <utility>

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

std::string EncodeGetOrCreateJobRequest(const GetOrCreateJobRequest& message) {
  std::string out;
  AppendStringField(&out, 1, message.graph);
  AppendVarintField(&out, 2, static_cast<uint64_t>(message.mode));
  AppendStringField(&out, 3, message.job_name);
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
  // Repeated bytes: every element is written, empty ones included (they are elements).
  for (const std::string& element : message.elements) wire::AppendBytesField(&out, 1, element);
  AppendVarintField(&out, 2, message.end_of_sequence ? 1 : 0);
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
        return false;
      });
  if (!read.ok()) return read;
  message.end_of_sequence = end != 0;
  return message;
}

}  // namespace sluice::service
