// A user function that does not return: UserFunctionStopToken() lets it leave,
// and Close(timeout) bounds the wait when it does not (issue 13, item 9).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/user_function_stop.h"

namespace sluice {
namespace close_timeout_test_file {
namespace {

using ::testing::HasSubstr;

// Polls `done` every millisecond, at most `limit` times (every wait in tests is
// bounded).
template <class Pred>
bool WaitFor(Pred done, int limit = 60000) {
  for (int i = 0; i < limit; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// Polls once, which starts the pipeline's workers, without waiting: nothing is left pending, so Close may
// follow.
void StartWithoutWaiting(Iterator<int64_t>* it) {
  auto next = it->Next();
  EXPECT_FALSE(next.await_ready());  // the only call is stuck: no element yet
}

TEST(UserFunctionStopTest, OutsideAPipelineTheTokenIsNeverStopped) {
  EXPECT_FALSE(UserFunctionStopToken().stop_possible());
}

// One call that runs until the pipeline stops it, as a long computation that checks the token between
// steps would. Nothing is pulled: a consumer waiting for the result before a stuck call would wait for that
// call too (the parallel Map wakes its consumer for a run of results, or when nothing is in flight).
TEST(UserFunctionStopTest, AFunctionThatObservesTheTokenLetsCloseFinish) {
  auto entered = std::make_shared<std::atomic<int>>(0);
  auto stopped = std::make_shared<std::atomic<int>>(0);
  auto f = [entered, stopped](int64_t) -> absl::StatusOr<int64_t> {
    entered->fetch_add(1);
    std::stop_token stop = UserFunctionStopToken();
    if (!WaitFor([&] { return stop.stop_requested(); })) return absl::InternalError("never stopped");
    stopped->fetch_add(1);
    return absl::CancelledError("stopped");
  };
  Options options;
  options.thread_pool_size = 2;
  Iterator<int64_t> it = Dataset<int64_t>(Range(1)).Map(f, 2).MakeIterator(options);
  StartWithoutWaiting(&it);
  ASSERT_TRUE(WaitFor([&] { return entered->load() == 1; }));
  EXPECT_TRUE(it.CloseBlocking(absl::Seconds(120)).ok());
  EXPECT_EQ(stopped->load(), 1);
  EXPECT_EQ(it.NextBlocking().value(), std::nullopt);  // closed: the end
}

// The same under a Prefetch: the synchronous Map runs on the producer, which
// passes its token on.
TEST(UserFunctionStopTest, APrefetchProducerPassesItsTokenToTheFunctionsItPulls) {
  auto entered = std::make_shared<std::atomic<int>>(0);
  auto f = [entered](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 0) return x;
    entered->fetch_add(1);
    std::stop_token stop = UserFunctionStopToken();
    if (!WaitFor([&] { return stop.stop_requested(); })) return absl::InternalError("never stopped");
    return absl::CancelledError("stopped");
  };
  Iterator<int64_t> it = Dataset<int64_t>(Range(10)).Map(f).Prefetch(1).MakeIterator();
  ASSERT_EQ(it.NextBlocking().value(), std::optional<int64_t>(0));
  ASSERT_TRUE(WaitFor([&] { return entered->load() == 1; }));
  EXPECT_TRUE(it.CloseBlocking(absl::Seconds(120)).ok());
}

// One call stuck in a function that ignores the token (Range(1); waiting for two stuck calls depended on
// the pool running the second worker, which TSan's run did not within 60 s): Close gives up after the timeout, says how many
// tasks are stuck, and neither it nor the destructor waits any longer. The
// calls are let go at the end so the background teardown completes before the
// test does.
TEST(UserFunctionStopTest, CloseWithATimeoutReportsCallsThatDoNotReturn) {
  auto entered = std::make_shared<std::atomic<int>>(0);
  auto release = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<std::atomic<bool>> watch = release;
  {
    auto f = [entered, release](int64_t x) -> int64_t {
      entered->fetch_add(1);
      WaitFor([&] { return release->load(); });  // deaf to the stop token
      return x;
    };
    Options options;
    options.thread_pool_size = 2;
    Iterator<int64_t> it = Dataset<int64_t>(Range(1)).Map(f, 2).MakeIterator(options);
    StartWithoutWaiting(&it);
    ASSERT_TRUE(WaitFor([&] { return entered->load() == 1; }));
    absl::Status closed = it.CloseBlocking(absl::Milliseconds(50));
    EXPECT_EQ(closed.code(), absl::StatusCode::kDeadlineExceeded) << closed;
    EXPECT_THAT(closed.message(), HasSubstr("1 of its tasks are still inside a user function"));
    EXPECT_THAT(closed.message(), HasSubstr("UserFunctionStopToken"));
    EXPECT_EQ(it.NextBlocking().value(), std::nullopt);
  }  // the iterator goes without waiting for the stuck calls
  release->store(true);
  // The background teardown ends once the calls return, and frees the function
  // with what it captured.
  ASSERT_TRUE(WaitFor([&] { return watch.use_count() == 1; }));
  release.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(UserFunctionStopTest, ATimedCloseThatFinishesInTimeIsOk) {
  Iterator<int64_t> it =
      Dataset<int64_t>(Range(100)).Map([](int64_t x) { return x; }, 2).Prefetch(2).MakeIterator();
  ASSERT_EQ(it.NextBlocking().value(), std::optional<int64_t>(0));
  EXPECT_TRUE(it.CloseBlocking(absl::Seconds(120)).ok());
  EXPECT_TRUE(it.CloseBlocking(absl::Seconds(1)).ok());  // twice: a no-op
}

}  // namespace
}  // namespace close_timeout_test_file
}  // namespace sluice
