// Exceptions at op boundaries become Statuses: out of memory is RESOURCE_EXHAUSTED, not INTERNAL.
#include "sluice/engine/detail/status_traits.h"

#include <new>
#include <stdexcept>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace sluice::detail {
namespace status_traits_test_file {
namespace {

absl::Status StatusOf(void (*thrower)(), std::string_view where = "") {
  try {
    thrower();
  } catch (...) {
    return StatusFromCurrentException(where);
  }
  return absl::OkStatus();
}

TEST(StatusTraitsTest, BadAllocIsResourceExhausted) {
  absl::Status status = StatusOf([] { throw std::bad_alloc(); }, "Map (element 3)");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(status.message(), "Map (element 3): out of memory")) << status;
}

TEST(StatusTraitsTest, OtherExceptionsAreInternalWithTheirMessage) {
  absl::Status status = StatusOf([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(), "exception thrown: boom");
  status = StatusOf([] { throw 7; }, "Filter");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(), "Filter: unknown exception thrown");
}

}  // namespace
}  // namespace status_traits_test_file
}  // namespace sluice::detail
