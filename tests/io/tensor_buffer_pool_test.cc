#include "io/tensor_buffer_pool.h"

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::detail {
namespace tensor_buffer_pool_test_file {
namespace {

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kTensorBlockAlignment == 0; }

// Sizes around every boundary: the small classes, the first quarter steps, the largest pooled class
// and past it.
std::vector<size_t> InterestingSizes() {
  return {0,
          1,
          63,
          64,
          65,
          191,
          256,
          257,
          320,
          321,
          3200,
          3584,
          3585,
          4096,
          4097,
          65536,
          kMaxPooledBytes,
          kMaxPooledBytes + 1,
          size_t{1} << 20};
}

class TensorBufferPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { ReleaseSharedTensorBlocks(); }
};

TEST_F(TensorBufferPoolTest, BlocksAreAlignedAndWritable) {
  for (size_t bytes : InterestingSizes()) {
    void* block = AllocateTensorBlock(bytes);
    ASSERT_TRUE(Aligned(block)) << bytes;
    for (size_t i = 0; i < bytes; i += 512) static_cast<char*>(block)[i] = 1;
    if (bytes > 0) static_cast<char*>(block)[bytes - 1] = 1;
    FreeTensorBlock(block, bytes);
  }
}

TEST_F(TensorBufferPoolTest, ClassesRoundUpWithBoundedSlack) {
  for (size_t bytes = 1; bytes <= kMaxPooledBytes; bytes += 61) {
    const size_t class_bytes = TensorBlockClassBytes(bytes);
    EXPECT_GE(class_bytes, bytes);
    if (!TensorBlocksArePooled()) continue;
    EXPECT_EQ(class_bytes % kTensorBlockAlignment, 0u) << bytes;
    EXPECT_LE(class_bytes, bytes < 256 ? 256 : bytes + bytes / 4 + 64) << bytes;
    EXPECT_EQ(TensorBlockClassBytes(class_bytes), class_bytes) << bytes;  // a class size is its own class
  }
  EXPECT_EQ(TensorBlockClassBytes(kMaxPooledBytes + 1), kMaxPooledBytes + 1);  // not pooled
}

TEST_F(TensorBufferPoolTest, FreedBlockIsReusedBySameClass) {
  if (!TensorBlocksArePooled()) GTEST_SKIP() << "AddressSanitizer build: blocks go to the system";
  void* first = AllocateTensorBlock(3200);
  FreeTensorBlock(first, 3200);
  EXPECT_EQ(ThreadCachedTensorBlocks(3200), 1u);
  void* again = AllocateTensorBlock(3300);  // another size of the same class
  EXPECT_EQ(again, first);
  EXPECT_EQ(ThreadCachedTensorBlocks(3200), 0u);
  FreeTensorBlock(again, 3300);
}

TEST_F(TensorBufferPoolTest, LargeBlocksAreNotCached) {
  const size_t bytes = kMaxPooledBytes + 1;
  void* block = AllocateTensorBlock(bytes);
  FreeTensorBlock(block, bytes);
  EXPECT_EQ(ThreadCachedTensorBlocks(bytes), 0u);
  EXPECT_EQ(SharedCachedTensorBlocks(bytes), 0u);
}

TEST_F(TensorBufferPoolTest, ThreadCacheIsBounded) {
  if (!TensorBlocksArePooled()) GTEST_SKIP() << "AddressSanitizer build: blocks go to the system";
  const size_t bytes = 3200;
  const size_t limit = ThreadCacheLimit(bytes);
  std::vector<void*> blocks;
  for (size_t i = 0; i < 10 * limit; ++i) blocks.push_back(AllocateTensorBlock(bytes));
  for (void* b : blocks) FreeTensorBlock(b, bytes);
  EXPECT_LT(ThreadCachedTensorBlocks(bytes), limit);
  EXPECT_EQ(ThreadCachedTensorBlocks(bytes) + SharedCachedTensorBlocks(bytes), 10 * limit);
}

TEST_F(TensorBufferPoolTest, SharedListsAreBounded) {
  if (!TensorBlocksArePooled()) GTEST_SKIP() << "AddressSanitizer build: blocks go to the system";
  const size_t bytes = 128 << 10;
  const size_t count = 2 * kSharedCacheBytes / TensorBlockClassBytes(bytes);
  std::vector<void*> blocks;
  for (size_t i = 0; i < count; ++i) blocks.push_back(AllocateTensorBlock(bytes));
  for (void* b : blocks) FreeTensorBlock(b, bytes);
  EXPECT_LE(SharedCachedTensorBlocks(bytes) * TensorBlockClassBytes(bytes), kSharedCacheBytes);
  EXPECT_LE(ThreadCachedTensorBlocks(bytes), ThreadCacheLimit(bytes));
}

// A producer thread allocates, a consumer thread frees and exits: a later thread's blocks are those.
TEST_F(TensorBufferPoolTest, CrossThreadFreesAreRecycled) {
  if (!TensorBlocksArePooled()) GTEST_SKIP() << "AddressSanitizer build: blocks go to the system";
  const size_t bytes = 3200;
  const size_t count = 8 * ThreadCacheLimit(bytes);
  std::vector<void*> produced(count);
  std::thread([&] {
    for (void*& b : produced) b = AllocateTensorBlock(bytes);
  }).join();
  std::thread([&] {
    for (void* b : produced) FreeTensorBlock(b, bytes);
  }).join();
  EXPECT_EQ(SharedCachedTensorBlocks(bytes), count);
  const std::set<void*> freed(produced.begin(), produced.end());
  size_t recycled = 0;
  std::thread([&] {
    std::vector<void*> again;
    for (size_t i = 0; i < count; ++i) again.push_back(AllocateTensorBlock(bytes));
    for (void* b : again) recycled += freed.count(b);
    for (void* b : again) FreeTensorBlock(b, bytes);
  }).join();
  EXPECT_EQ(recycled, count);
}

TEST_F(TensorBufferPoolTest, ExitingThreadHandsItsCacheOver) {
  if (!TensorBlocksArePooled()) GTEST_SKIP() << "AddressSanitizer build: blocks go to the system";
  const size_t bytes = 1000;
  size_t cached_at_exit = 0;
  std::thread([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 3; ++i) blocks.push_back(AllocateTensorBlock(bytes));
    for (void* b : blocks) FreeTensorBlock(b, bytes);
    cached_at_exit = ThreadCachedTensorBlocks(bytes);
  }).join();
  EXPECT_EQ(cached_at_exit, 3u);
  EXPECT_EQ(SharedCachedTensorBlocks(bytes), 3u);
}

// Many threads allocating and freeing each other's blocks at once (for TSan).
TEST_F(TensorBufferPoolTest, ConcurrentProducersAndConsumers) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<std::vector<void*>> handoff(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &handoff] {
      for (int i = 0; i < kRounds; ++i) {
        const size_t bytes = 64 + static_cast<size_t>((i * 37 + t) % 5000);
        void* block = AllocateTensorBlock(bytes);
        static_cast<char*>(block)[0] = static_cast<char>(i);
        static_cast<char*>(block)[bytes - 1] = static_cast<char>(t);
        handoff[static_cast<size_t>(t)].push_back(block);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    // Thread t frees what thread t+1 allocated.
    threads.emplace_back([t, &handoff] {
      const std::vector<void*>& blocks = handoff[static_cast<size_t>((t + 1) % kThreads)];
      for (size_t i = 0; i < blocks.size(); ++i) {
        FreeTensorBlock(blocks[i],
                        64 + static_cast<size_t>((static_cast<int>(i) * 37 + (t + 1) % kThreads) % 5000));
        void* fresh = AllocateTensorBlock(100);
        FreeTensorBlock(fresh, 100);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace
}  // namespace tensor_buffer_pool_test_file
}  // namespace sluice::detail
