#include "sluice/engine/task.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/status_macros.h"
#include "sluice/engine/sync_wait.h"

namespace sluice {
namespace task_test_file {
namespace {

Task<int> FortyTwo() { co_return 42; }

Task<int> AddOne(int x) { co_return x + 1; }

Task<int> Chain(int depth) {
  if (depth == 0) co_return 0;
  int below = co_await Chain(depth - 1);
  co_return below + 1;
}

Task<void> SetFlag(bool* flag) {
  *flag = true;
  co_return;
}

Task<std::unique_ptr<int>> MoveOnly(int v) { co_return std::make_unique<int>(v); }

Task<int> Throws() {
  throw std::runtime_error("boom");
  co_return 1;
}

Task<absl::Status> ThrowsIntoStatus() {
  throw std::runtime_error("kaput");
  co_return absl::OkStatus();
}

Task<absl::StatusOr<int>> MaybeInt(bool fail) {
  if (fail) co_return absl::InvalidArgumentError("asked to fail");
  co_return 7;
}

Task<absl::StatusOr<int>> UsesMacros(bool fail) {
  SLUICE_CO_ASSIGN_OR_RETURN(int v, co_await MaybeInt(fail));
  SLUICE_CO_RETURN_IF_ERROR(v == 7 ? absl::OkStatus() : absl::InternalError("bad"));
  co_return v * 2;
}

TEST(TaskTest, ReturnsValue) { EXPECT_EQ(SyncWait(FortyTwo()), 42); }

TEST(TaskTest, IsLazy) {
  bool ran = false;
  Task<void> task = SetFlag(&ran);
  EXPECT_FALSE(ran);
  SyncWait(std::move(task));
  EXPECT_TRUE(ran);
}

TEST(TaskTest, UnawaitedTaskIsFreed) {
  bool ran = false;
  { Task<void> task = SetFlag(&ran); }
  EXPECT_FALSE(ran);
}

TEST(TaskTest, AwaitsChainsWithoutStackGrowth) {
  // Deep recursion through symmetric transfer; each level is a separate frame on the heap.
  EXPECT_EQ(SyncWait(Chain(10000)), 10000);
}

TEST(TaskTest, AwaitsLvalueTask) {
  EXPECT_EQ(SyncWait([]() -> Task<int> {
              Task<int> inner = AddOne(1);
              int v = co_await inner;
              co_return v;
            }()),
            2);
}

TEST(TaskTest, MoveOnlyResult) {
  std::unique_ptr<int> p = SyncWait(MoveOnly(5));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

TEST(TaskTest, ExceptionRethrownForPlainTypes) {
  EXPECT_THROW(SyncWait(Throws()), std::runtime_error);
}

TEST(TaskTest, ExceptionBecomesStatusForStatusTypes) {
  absl::Status status = SyncWait(ThrowsIntoStatus());
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("kaput"), std::string::npos);
}

TEST(TaskTest, StatusMacrosPropagate) {
  absl::StatusOr<int> ok = SyncWait(UsesMacros(false));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 14);
  absl::StatusOr<int> failed = SyncWait(UsesMacros(true));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
}

Task<bool> StopRequested() {
  std::stop_token token = co_await CurrentStopToken();
  co_return token.stop_requested();
}

Task<bool> NestedStopRequested() { co_return co_await StopRequested(); }

TEST(TaskTest, StopTokenReachesNestedTasks) {
  std::stop_source source;
  EXPECT_FALSE(SyncWait(NestedStopRequested(), source.get_token()));
  source.request_stop();
  EXPECT_TRUE(SyncWait(NestedStopRequested(), source.get_token()));
}

}  // namespace
}  // namespace task_test_file
}  // namespace sluice
