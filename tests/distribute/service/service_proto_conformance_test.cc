// docs/service.proto against distribute/service/messages.cc: where protoc is installed, the bytes protoc
// encodes from text format must equal ours, byte for byte (both canonical proto3).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/service/messages.h"
#include "gtest/gtest.h"

namespace sluice::service {
namespace service_proto_conformance_test_file {
namespace {

// <repo>/docs, found from this file's path (CMake compiles tests by absolute path).
std::filesystem::path DocsDir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "docs";
}

// `protoc --encode` of `text` as sluice.service.<type>.
absl::StatusOr<std::string> ProtocEncode(const std::string& type, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir());
  const std::string stem = absl::StrCat("sluice_service_proto_", ::getpid(), "_", type);
  const std::filesystem::path in = dir / (stem + ".txt");
  const std::filesystem::path out = dir / (stem + ".bin");
  std::ofstream(in) << text;
  const std::string command =
      absl::StrCat("protoc --encode=sluice.service.", type, " -I", DocsDir().string(), " ",
                   (DocsDir() / "service.proto").string(), " < ", in.string(), " > ", out.string());
  const int rc = std::system(command.c_str());
  std::ifstream file(out, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  if (rc != 0) return absl::InternalError(absl::StrCat("protoc failed (", rc, "): ", command));
  return bytes;
}

class ProtoConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("protoc --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "protoc is not installed";
  }
};

TEST_F(ProtoConformanceTest, GetOrCreateJob) {
  absl::StatusOr<std::string> request = ProtocEncode(
      "GetOrCreateJobRequest", R"(graph: "graph\000bytes\377" mode: DISTRIBUTED_EPOCH job_name: "shared")");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(*request, EncodeGetOrCreateJobRequest({std::string("graph\0bytes\xff", 12),
                                                   ProcessingMode::kDistributedEpoch, "shared"}));
  absl::StatusOr<std::string> response =
      ProtocEncode("GetOrCreateJobResponse", "job_id: 18446744073709551615 job_client_id: 42");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(*response, EncodeGetOrCreateJobResponse({UINT64_MAX, 42}));
}

TEST_F(ProtoConformanceTest, GetElements) {
  absl::StatusOr<std::string> request = ProtocEncode(
      "GetElementsRequest", "job_client_id: 7 max_elements: 4294967295 max_bytes: 1099511627776");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(*request, EncodeGetElementsRequest({7, UINT32_MAX, uint64_t{1} << 40}));
  absl::StatusOr<std::string> response = ProtocEncode(
      "GetElementsResponse", R"(elements: "a" elements: "" elements: "xyz" end_of_sequence: true)");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(*response, EncodeGetElementsResponse({{"a", "", "xyz"}, true, absl::OkStatus()}));
}

TEST_F(ProtoConformanceTest, FieldsAddedForJobsTasksAndErrors) {
  GetOrCreateJobRequest job{"g", ProcessingMode::kParallelEpochs, "", 3, 9};
  absl::StatusOr<std::string> request =
      ProtocEncode("GetOrCreateJobRequest", R"(graph: "g" mode: PARALLEL_EPOCHS iteration: 3 job_id: 9)");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(*request, EncodeGetOrCreateJobRequest(job));
  absl::StatusOr<std::string> get = ProtocEncode("GetElementsRequest", "max_elements: 2 task_id: 77");
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(*get, EncodeGetElementsRequest({0, 2, 0, 77}));
  absl::StatusOr<std::string> answer =
      ProtocEncode("GetElementsResponse", R"(elements: "a" error { code: 15 message: "bad" })");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, EncodeGetElementsResponse({{"a"}, false, absl::DataLossError("bad")}));
}

TEST_F(ProtoConformanceTest, WorkerMessages) {
  absl::StatusOr<std::string> reg = ProtocEncode("RegisterWorkerRequest", R"(address: "127.0.0.1:5051")");
  ASSERT_TRUE(reg.ok()) << reg.status();
  EXPECT_EQ(*reg, EncodeRegisterWorkerRequest({"127.0.0.1:5051"}));
  absl::StatusOr<std::string> beat = ProtocEncode(
      "WorkerHeartbeatRequest",
      R"(worker_id: 4 reports { task_id: 8 } reports { task_id: 9 error { code: 9 message: "no kFoo" } })");
  ASSERT_TRUE(beat.ok()) << beat.status();
  WorkerHeartbeatRequest reports;
  reports.worker_id = 4;
  reports.reports = {TaskReport{8, absl::OkStatus()},
                     TaskReport{9, absl::FailedPreconditionError("no kFoo")}};
  EXPECT_EQ(*beat, EncodeWorkerHeartbeatRequest(reports));
  absl::StatusOr<std::string> bye = ProtocEncode("WorkerHeartbeatRequest", "worker_id: 4 leaving: true");
  ASSERT_TRUE(bye.ok()) << bye.status();
  EXPECT_EQ(*bye, EncodeWorkerHeartbeatRequest({4, {}, true, {}}));
  absl::StatusOr<std::string> holding =
      ProtocEncode("WorkerHeartbeatRequest", "worker_id: 4 current_tasks: 8 current_tasks: 1000");
  ASSERT_TRUE(holding.ok()) << holding.status();
  EXPECT_EQ(*holding, EncodeWorkerHeartbeatRequest({4, {}, false, {8, 1000}}));
  absl::StatusOr<std::string> ask = ProtocEncode("GetSplitRequest", "task_id: 6 split_index: 3");
  ASSERT_TRUE(ask.ok()) << ask.status();
  EXPECT_EQ(*ask, EncodeGetSplitRequest({6, 3}));
  absl::StatusOr<std::string> tasks =
      ProtocEncode("WorkerHeartbeatResponse",
                   R"(tasks { task_id: 1 job_id: 2 iteration: 3 graph: "g" mode: DISTRIBUTED_EPOCH })");
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  EXPECT_EQ(*tasks,
            EncodeWorkerHeartbeatResponse({{TaskDef{1, 2, 3, "g", ProcessingMode::kDistributedEpoch}}, {}}));
  absl::StatusOr<std::string> cancelled =
      ProtocEncode("WorkerHeartbeatResponse", "cancelled_tasks: 7 cancelled_tasks: 300");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(*cancelled, EncodeWorkerHeartbeatResponse({{}, {7, 300}}));  // packed, as proto3 writes it
  absl::StatusOr<std::string> split = ProtocEncode("GetSplitResponse", "begin: 128 end: 256");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(*split, EncodeGetSplitResponse({128, 256, false}));
  absl::StatusOr<std::string> last = ProtocEncode("GetSplitResponse", "end_of_splits: true");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, EncodeGetSplitResponse({0, 0, true}));
}

TEST_F(ProtoConformanceTest, ClientHeartbeat) {
  absl::StatusOr<std::string> request = ProtocEncode("ClientHeartbeatRequest", "job_id: 5 iteration: 1");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(*request, EncodeClientHeartbeatRequest({5, 1}));
  absl::StatusOr<std::string> release =
      ProtocEncode("ClientHeartbeatRequest", "job_id: 5 iteration: 1 job_client_id: 9 releasing: true");
  ASSERT_TRUE(release.ok()) << release.status();
  EXPECT_EQ(*release, EncodeClientHeartbeatRequest({5, 1, 9, true}));
  absl::StatusOr<std::string> response = ProtocEncode(
      "ClientHeartbeatResponse",
      R"(tasks { task_id: 6 worker_address: "127.0.0.1:7" } finished: true error { code: 14 message: "x" })");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(*response,
            EncodeClientHeartbeatResponse({{TaskInfo{6, "127.0.0.1:7"}}, true, absl::UnavailableError("x")}));
}

TEST_F(ProtoConformanceTest, JournalEvents) {
  absl::StatusOr<std::string> job = ProtocEncode(
      "JournalEvent", R"(kind: JOB_CREATED id: 12 name: "train" graph: "g" mode: DISTRIBUTED_EPOCH)");
  ASSERT_TRUE(job.ok()) << job.status();
  JournalEvent created;
  created.kind = JournalEventKind::kJobCreated;
  created.id = 12;
  created.name = "train";
  created.graph = "g";
  created.mode = ProcessingMode::kDistributedEpoch;
  EXPECT_EQ(*job, EncodeJournalEvent(created));
  absl::StatusOr<std::string> failed = ProtocEncode(
      "JournalEvent", R"(kind: TASK_FINISHED id: 3 worker_id: 2 error { code: 9 message: "no kFoo" })");
  ASSERT_TRUE(failed.ok()) << failed.status();
  JournalEvent finished;
  finished.kind = JournalEventKind::kTaskFinished;
  finished.id = 3;
  finished.worker_id = 2;
  finished.error = absl::FailedPreconditionError("no kFoo");
  EXPECT_EQ(*failed, EncodeJournalEvent(finished));
  absl::StatusOr<std::string> split =
      ProtocEncode("JournalEvent", "kind: SPLIT_GIVEN id: 5 split_index: 1 begin: 100 end: 200");
  ASSERT_TRUE(split.ok()) << split.status();
  JournalEvent given;
  given.kind = JournalEventKind::kSplitGiven;
  given.id = 5;
  given.split_index = 1;
  given.begin = 100;
  given.end = 200;
  EXPECT_EQ(*split, EncodeJournalEvent(given));
  absl::StatusOr<std::string> left =
      ProtocEncode("JournalEvent", R"(kind: WORKER_DROPPED id: 4 reason: "stopping")");
  ASSERT_TRUE(left.ok()) << left.status();
  JournalEvent dropped;
  dropped.kind = JournalEventKind::kWorkerDropped;
  dropped.id = 4;
  dropped.reason = "stopping";
  EXPECT_EQ(*left, EncodeJournalEvent(dropped));
}

TEST_F(ProtoConformanceTest, Agreement) {
  absl::StatusOr<std::string> round =
      ProtocEncode("AgreementRoundRequest",
                   R"(agreement: "train" num_workers: 3 worker: 2 epoch: 1 step: 300 mine: true)");
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(*round, EncodeAgreementRoundRequest({"train", 3, 2, 1, 300, true}));
  absl::StatusOr<std::string> answer = ProtocEncode("AgreementRoundResponse", "any: true");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, EncodeAgreementRoundResponse({true}));
  absl::StatusOr<std::string> abandon =
      ProtocEncode("AgreementAbandonRequest", R"(agreement: "train" num_workers: 3 worker: 1 epoch: 4)");
  ASSERT_TRUE(abandon.ok()) << abandon.status();
  EXPECT_EQ(*abandon, EncodeAgreementAbandonRequest({"train", 3, 1, 4}));
}

TEST_F(ProtoConformanceTest, ErrorPayload) {
  absl::StatusOr<std::string> error = ProtocEncode("ErrorPayload", R"(code: 5 message: "no job \"x\"")");
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(*error, EncodeErrorPayload(absl::NotFoundError("no job \"x\"")));
  EXPECT_EQ(DecodeErrorPayload(*error), absl::NotFoundError("no job \"x\""));
}

}  // namespace
}  // namespace service_proto_conformance_test_file
}  // namespace sluice::service
