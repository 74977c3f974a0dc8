#include "distribute/service/messages.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "io/proto_wire.h"
#include "sluice/dataset.h"
#include "sluice/ops/graph.h"

namespace sluice::service {
namespace service_messages_test_file {
namespace {

TEST(MessagesTest, GetOrCreateJobRequestRoundTripsARealGraph) {
  absl::StatusOr<std::string> graph = Serialize(Range(0, 10));
  ASSERT_TRUE(graph.ok()) << graph.status();
  GetOrCreateJobRequest in{*graph, ProcessingMode::kDistributedEpoch, "shared"};
  absl::StatusOr<GetOrCreateJobRequest> out = DecodeGetOrCreateJobRequest(EncodeGetOrCreateJobRequest(in));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->graph, *graph);
  EXPECT_EQ(out->mode, ProcessingMode::kDistributedEpoch);
  EXPECT_EQ(out->job_name, "shared");
  EXPECT_TRUE(ParseGraph(out->graph).ok());
}

TEST(MessagesTest, EncodingIsCanonicalProto3) {
  // Hand-written bytes as libprotobuf writes them: fields in order, defaults omitted.
  EXPECT_EQ(EncodeGetOrCreateJobRequest({"g", ProcessingMode::kParallelEpochs, "j"}),
            std::string("\x0a\x01g\x10\x01\x1a\x01j", 8));
  EXPECT_EQ(EncodeGetOrCreateJobRequest({}), "");
  EXPECT_EQ(EncodeGetOrCreateJobResponse({300, 1}), std::string("\x08\xac\x02\x10\x01", 5));
  EXPECT_EQ(EncodeGetElementsRequest({5, 16, 0}), std::string("\x08\x05\x10\x10", 4));
  EXPECT_EQ(EncodeGetElementsResponse({{"a", ""}, true, absl::OkStatus()}), std::string("\x0a\x01"
                                                                                        "a"
                                                                                        "\x0a\x00\x10\x01",
                                                                                        7));
}

TEST(MessagesTest, OtherMessagesRoundTrip) {
  absl::StatusOr<GetOrCreateJobResponse> job =
      DecodeGetOrCreateJobResponse(EncodeGetOrCreateJobResponse({UINT64_MAX, 42}));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->job_id, UINT64_MAX);
  EXPECT_EQ(job->job_client_id, 42u);

  absl::StatusOr<GetElementsRequest> get =
      DecodeGetElementsRequest(EncodeGetElementsRequest({7, UINT32_MAX, uint64_t{1} << 40}));
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->job_client_id, 7u);
  EXPECT_EQ(get->max_elements, UINT32_MAX);
  EXPECT_EQ(get->max_bytes, uint64_t{1} << 40);

  GetElementsResponse in;
  for (int i = 0; i < 100; ++i) in.elements.push_back(std::string(i, static_cast<char>(i)));
  absl::StatusOr<GetElementsResponse> out = DecodeGetElementsResponse(EncodeGetElementsResponse(in));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->elements, in.elements);
  EXPECT_FALSE(out->end_of_sequence);

  absl::StatusOr<ClientHeartbeatRequest> beat =
      DecodeClientHeartbeatRequest(EncodeClientHeartbeatRequest({3, 4, UINT64_MAX, true}));
  ASSERT_TRUE(beat.ok());
  EXPECT_EQ(beat->job_client_id, UINT64_MAX);
  EXPECT_TRUE(beat->releasing);
}

TEST(MessagesTest, CancelledTasksDecodePackedOrOneVarintPerField) {
  absl::StatusOr<WorkerHeartbeatResponse> packed =
      DecodeWorkerHeartbeatResponse(EncodeWorkerHeartbeatResponse({{}, {1, UINT64_MAX, 300}}));
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->cancelled_tasks, (std::vector<uint64_t>{1, UINT64_MAX, 300}));
  // Field 2 as two plain varints (what a proto2 writer sends), then a packed run: all accepted, in order.
  const std::string mixed = std::string("\x10\x05\x10\x06\x12\x02\x07\x08", 8);
  absl::StatusOr<WorkerHeartbeatResponse> decoded = DecodeWorkerHeartbeatResponse(mixed);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->cancelled_tasks, (std::vector<uint64_t>{5, 6, 7, 8}));
  // A packed run whose last varint is cut off is malformed, not a short list.
  absl::StatusOr<WorkerHeartbeatResponse> cut =
      DecodeWorkerHeartbeatResponse(std::string("\x12\x02\x07\x80", 4));
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument) << cut.status();
  EXPECT_NE(cut.status().message().find("WorkerHeartbeatResponse"), std::string::npos) << cut.status();
}

TEST(MessagesTest, ErrorPayloadCarriesCodeAndMessage) {
  absl::Status s = DecodeErrorPayload(EncodeErrorPayload(absl::NotFoundError("no job \"x\"")));
  EXPECT_EQ(s, absl::NotFoundError("no job \"x\""));
  // OK is not an error; a code from the future becomes Unknown with its message kept.
  EXPECT_EQ(DecodeErrorPayload("").code(), absl::StatusCode::kInternal);
  std::string future;
  wire::AppendTag(&future, 1, wire::kVarint);
  wire::AppendVarint(&future, 99);
  wire::AppendBytesField(&future, 2, "later");
  EXPECT_EQ(DecodeErrorPayload(future), absl::UnknownError("later"));
  EXPECT_EQ(DecodeErrorPayload("\x08").code(), absl::StatusCode::kInternal);
}

TEST(MessagesTest, UnknownFieldsAreSkippedAndOrderDoesNotMatter) {
  std::string bytes;
  wire::AppendBytesField(&bytes, 3, "name");
  wire::AppendTag(&bytes, 99, wire::kFixed64);
  wire::AppendFixed64(&bytes, 1);
  wire::AppendTag(&bytes, 2, wire::kVarint);
  wire::AppendVarint(&bytes, 1);
  wire::AppendBytesField(&bytes, 1, "graph");
  wire::AppendBytesField(&bytes, 50, "from a newer peer");
  absl::StatusOr<GetOrCreateJobRequest> out = DecodeGetOrCreateJobRequest(bytes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->graph, "graph");
  EXPECT_EQ(out->job_name, "name");
  EXPECT_EQ(out->mode, ProcessingMode::kParallelEpochs);
}

TEST(MessagesTest, HostileBytesGiveInvalidArgumentNamingMessageAndField) {
  struct Case {
    std::string bytes;
    const char* says;
  };
  std::string wrong_type;  // graph (bytes) sent as a varint
  wire::AppendTag(&wrong_type, 1, wire::kVarint);
  wire::AppendVarint(&wrong_type, 1);
  std::string bad_mode;
  wire::AppendTag(&bad_mode, 2, wire::kVarint);
  wire::AppendVarint(&bad_mode, 3);
  const std::vector<Case> cases = {
      {std::string("\x0a\x05"
                   "ab",
                   4),
       "runs past the end"},
      {std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11), "runs past the end"},
      {std::string("\x10\x80", 2), "truncated varint"},
      {std::string("\x10\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12), "longer than 10 bytes"},
      {std::string("\x0b", 1), "group"},
      {std::string("\x00\x01", 2), "field number 0"},
      {std::string("\x0f", 1), "wire type 6 or 7"},
      {wrong_type, "field 1 has wire type 0"},
      {bad_mode, "unknown processing mode 3"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<GetOrCreateJobRequest> out = DecodeGetOrCreateJobRequest(c.bytes);
    ASSERT_FALSE(out.ok()) << c.says;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("GetOrCreateJobRequest"), std::string::npos) << out.status();
    EXPECT_NE(out.status().message().find(c.says), std::string::npos) << out.status();
  }
  std::string big;
  wire::AppendTag(&big, 2, wire::kVarint);
  wire::AppendVarint(&big, uint64_t{1} << 32);
  EXPECT_NE(DecodeGetElementsRequest(big).status().message().find("exceeds uint32"), std::string::npos);
  EXPECT_EQ(DecodeGetElementsResponse("\x0a\x02"
                                      "a")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeGetOrCreateJobResponse("\x0a\x00").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MessagesTest, EveryTruncationOfAValidMessageFailsOrDecodesAPrefix) {
  const std::string bytes =
      EncodeGetOrCreateJobRequest({"graph-bytes", ProcessingMode::kParallelEpochs, "job"});
  // A cut between fields is a valid shorter message; a cut inside a field must be refused.
  const std::vector<size_t> field_boundaries = {0, 13, 15, bytes.size()};
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::StatusOr<GetOrCreateJobRequest> out =
        DecodeGetOrCreateJobRequest(std::string_view(bytes).substr(0, n));
    const bool boundary =
        std::find(field_boundaries.begin(), field_boundaries.end(), n) != field_boundaries.end();
    EXPECT_EQ(out.ok(), boundary) << n << ": " << out.status();
  }
}

}  // namespace
}  // namespace service_messages_test_file
}  // namespace sluice::service
