#include "io/read_buffer_cache.h"

#include <cstddef>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/io/file.h"
#include "sluice/io/sequential_reader.h"
#include "tests/test_util.h"

namespace sluice::detail {
namespace read_buffer_cache_test_file {
namespace {

std::byte* NewBuffer(size_t bytes) {
  return static_cast<std::byte*>(::operator new(bytes, std::align_val_t(kDirectIoAlignment)));
}
void DeleteBuffer(std::byte* buffer) { ::operator delete(buffer, std::align_val_t(kDirectIoAlignment)); }

class ReadBufferCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ReadBuffersAreCached()) GTEST_SKIP() << "buffers are not cached under AddressSanitizer";
    ReleaseCachedReadBuffers();
  }
  void TearDown() override { ReleaseCachedReadBuffers(); }
};

TEST_F(ReadBufferCacheTest, ABufferIsTakenBackOnlyAtItsSize) {
  std::byte* buffer = NewBuffer(size_t{1} << 20);
  ASSERT_TRUE(CacheReadBuffer(buffer, size_t{1} << 20));
  EXPECT_EQ(CachedReadBufferBytes(), size_t{1} << 20);
  EXPECT_EQ(TakeCachedReadBuffer(size_t{1} << 19), nullptr);
  EXPECT_EQ(TakeCachedReadBuffer(size_t{1} << 20), buffer);
  EXPECT_EQ(CachedReadBufferBytes(), 0u);
  EXPECT_EQ(TakeCachedReadBuffer(size_t{1} << 20), nullptr);
  DeleteBuffer(buffer);
}

TEST_F(ReadBufferCacheTest, HoldsAtMostItsBound) {
  const size_t bytes = size_t{1} << 20;
  std::vector<std::byte*> refused;
  for (size_t i = 0; i < kReadBufferCacheBytes / bytes + 2; ++i) {
    std::byte* buffer = NewBuffer(bytes);
    if (!CacheReadBuffer(buffer, bytes)) refused.push_back(buffer);
  }
  EXPECT_EQ(CachedReadBufferBytes(), kReadBufferCacheBytes);
  EXPECT_EQ(refused.size(), 2u);
  for (std::byte* buffer : refused) DeleteBuffer(buffer);
  // Larger than the whole cache: never kept.
  std::byte* huge = NewBuffer(kReadBufferCacheBytes + 4096);
  ReleaseCachedReadBuffers();
  EXPECT_FALSE(CacheReadBuffer(huge, kReadBufferCacheBytes + 4096));
  DeleteBuffer(huge);
}

Task<std::string> ReadAll(AsyncGenerator<absl::StatusOr<Block>> blocks) {
  std::string bytes;
  for (int guard = 0; guard < 1000; ++guard) {
    std::optional<absl::StatusOr<Block>> block = co_await blocks.Next();
    if (!block.has_value()) break;
    if (!block->ok()) {
      ADD_FAILURE() << block->status();
      break;
    }
    bytes.append(reinterpret_cast<const char*>((*block)->data.data()), (*block)->data.size());
  }
  co_return bytes;
}

TEST_F(ReadBufferCacheTest, AFileReaderLeavesItsBuffersToTheNextOne) {
  const std::string path = testing_util::TempPath("read_buffer_cache");
  const std::string content = testing_util::RandomBytes(5 * 4096 + 17, 7);
  testing_util::WriteFile(path, content);
  SequentialReadOptions options;
  options.block_size = 4096;
  options.blocks_in_flight = 2;
  options.mode = ReadMode::kRead;
  EXPECT_EQ(SyncWait(ReadAll(ReadBlocks(DefaultReactor(), path, options))), content);
  // Its pool's buffers (blocks in flight + 1) wait for the next reader...
  const size_t cached = CachedReadBufferBytes();
  EXPECT_GE(cached, 4096u);
  EXPECT_LE(cached, 3 * 4096u);
  // ...which reads into them (the same bytes come out) and leaves them again: the cache does not grow.
  EXPECT_EQ(SyncWait(ReadAll(ReadBlocks(DefaultReactor(), path, options))), content);
  EXPECT_EQ(CachedReadBufferBytes(), cached);
}

}  // namespace
}  // namespace read_buffer_cache_test_file
}  // namespace sluice::detail
