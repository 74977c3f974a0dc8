// docs/service.proto against distribute/service/messages.cc: where protoc is installed, the bytes protoc
// encodes from text format must equal ours, byte for byte (both canonical proto3).
#include "distribute/service/messages.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sluice::service {
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
  const std::string command = absl::StrCat("protoc --encode=sluice.service.", type, " -I", DocsDir().string(),
                                           " ", (DocsDir() / "service.proto").string(), " < ", in.string(),
                                           " > ", out.string());
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
  EXPECT_EQ(*response, EncodeGetElementsResponse({{"a", "", "xyz"}, true}));
}

TEST_F(ProtoConformanceTest, ErrorPayload) {
  absl::StatusOr<std::string> error = ProtocEncode("ErrorPayload", R"(code: 5 message: "no job \"x\"")");
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(*error, EncodeErrorPayload(absl::NotFoundError("no job \"x\"")));
  EXPECT_EQ(DecodeErrorPayload(*error), absl::NotFoundError("no job \"x\""));
}

}  // namespace
}  // namespace sluice::service
