#include "sluice/engine/detail/frame_allocator.h"

#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"

namespace sluice::detail {
namespace {

TEST(FrameAllocatorTest, AFreedFrameIsReusedByTheNextFrameOfItsSizeClass) {
  if (!RecyclesFrames()) GTEST_SKIP() << "this library allocates every frame (AddressSanitizer)";
  void* first = AllocateFrame(100);
  FreeFrame(first, 100);
  void* second = AllocateFrame(128);  // 65..128 bytes: the same class
  EXPECT_EQ(second, first);
  std::memset(second, 0xAB, 128);  // the block holds the class's largest frame
  FreeFrame(second, 128);
}

TEST(FrameAllocatorTest, AFrameFreedOnAnotherThreadServesThatThread) {
  if (!RecyclesFrames()) GTEST_SKIP() << "this library allocates every frame (AddressSanitizer)";
  void* made_here = AllocateFrame(300);
  void* reused = nullptr;
  std::thread other([&] {
    FreeFrame(made_here, 300);
    reused = AllocateFrame(320);
    std::memset(reused, 0xCD, 320);
    FreeFrame(reused, 320);
  });
  other.join();
  EXPECT_EQ(reused, made_here);
}

TEST(FrameAllocatorTest, FramesOfEverySizeAreUsable) {
  // Sizes around each class boundary and past the cached range, every byte written: under ASan each frame
  // is its own allocation of exactly `size`; elsewhere glibc's heap checks see an overrun on free.
  std::vector<std::pair<void*, size_t>> frames;
  for (size_t size : {1, 63, 64, 65, 1023, 1024, 1025, 4096}) {
    for (int copy = 0; copy < 6; ++copy) {  // more than a class caches
      void* frame = AllocateFrame(size);
      std::memset(frame, copy, size);
      frames.emplace_back(frame, size);
    }
  }
  for (auto& [frame, size] : frames) FreeFrame(frame, size);
  for (size_t size : {1, 64, 65, 1024, 4096}) {
    void* frame = AllocateFrame(size);
    std::memset(frame, 0xEE, size);
    FreeFrame(frame, size);
  }
}

Task<int> AddOne(int x) { co_return x + 1; }
Task<int> Chain(int depth) {
  int total = 0;
  for (int i = 0; i < depth; ++i) total += co_await AddOne(i);
  co_return total;
}

TEST(FrameAllocatorTest, TasksRunInRecycledFrames) {
  // 1,000 short tasks, one after another: every frame after the first comes from the cache.
  EXPECT_EQ(SyncWait(Chain(1000)), 1000 * 999 / 2 + 1000);
}

}  // namespace
}  // namespace sluice::detail
