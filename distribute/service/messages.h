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

namespace sluice::service {

// How workers divide a job's input (tf.data service's processing modes).
enum class ProcessingMode : uint32_t {
  kUnspecified = 0,       // refused by the dispatcher: a request must say which it means
  kParallelEpochs = 1,    // every worker runs the whole pipeline
  kDistributedEpoch = 2,  // the dispatcher hands out splits of the one splittable source
};

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
};

struct GetElementsResponse {
  std::vector<std::string> elements;  // element-codec bytes, in order
  bool end_of_sequence = false;       // no element follows those above
};

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

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_MESSAGES_H_
