#include "sluice/ops/parallel_interleave.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"

namespace sluice {
namespace parallel_interleave_test_file {
namespace {

#if defined(SLUICE_SANITIZED_BUILD)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Elements as comparable strings: values as numbers, errors as their code.
template <class T>
std::vector<std::string> Render(const Dataset<T>& ds, Options options = {}) {
  std::vector<std::string> out;
  Iterator<T> it = ds.MakeIterator(options);
  for (absl::StatusOr<T> x : it) {
    out.push_back(x.ok() ? std::to_string(*x) : "E" + std::to_string(static_cast<int>(x.status().code())));
    if (out.size() > 100000) break;
  }
  return out;
}

// Sub-dataset lengths vary with x, including empty ones; x % 7 == 3 has an error element inside.
Dataset<int64_t> Sub(int64_t x) {
  int64_t length = (x * 5) % 9;
  Dataset<int64_t> ds = Range(x * 100, x * 100 + length);
  if (x % 7 == 3) {
    ds = ds.Map([](int64_t v) -> absl::StatusOr<int64_t> {
      if (v % 100 == 1) return absl::DataLossError("bad element");
      return v;
    });
  }
  return ds;
}

// The input has an error element at 4; f fails for 9.
absl::StatusOr<Dataset<int64_t>> SubOrError(int64_t x) {
  if (x == 9) return absl::NotFoundError("no dataset for 9");
  return Sub(x);
}

Dataset<int64_t> Input(int64_t n) {
  return Range(n).Map([](int64_t x) -> absl::StatusOr<int64_t> {
    if (x == 4) return absl::InvalidArgumentError("bad input 4");
    return x;
  });
}

TEST(ParallelInterleaveTest, DeterministicEqualsSequential) {
  const int64_t n = kSanitized ? 20 : 40;
  // Fewer combinations under the sanitizers, where every pool hop costs far more.
  const std::vector<int64_t> all_calls = kSanitized ? std::vector<int64_t>{1, 4, kAutotune}
                                                    : std::vector<int64_t>{1, 2, 4, 16, kAutotune};
  const std::vector<int> all_threads = kSanitized ? std::vector<int>{2} : std::vector<int>{1, 3};
  int combos = 0;
  for (int64_t cycle : {1, 2, 3, 5, 8}) {
    for (int64_t block : {1, 2, 4}) {
      std::vector<std::string> want = Render(Input(n).Interleave(SubOrError, cycle, block));
      ASSERT_FALSE(want.empty());
      for (int64_t all_calls_entry : all_calls) {
        // tf.data rejects num_parallel_calls > cycle_length (tested below).
        int64_t calls = all_calls_entry == kAutotune ? kAutotune : std::min(all_calls_entry, cycle);
        for (int threads : all_threads) {
          Options options;
          options.thread_pool_size = threads;
          EXPECT_EQ(Render(Input(n).Interleave(SubOrError, cycle, block, calls, true), options), want)
              << "cycle " << cycle << " block " << block << " calls " << calls << " threads " << threads;
          ++combos;
        }
      }
    }
  }
  EXPECT_EQ(combos, static_cast<int>(15 * all_calls.size() * all_threads.size()));
}

TEST(ParallelInterleaveTest, AsyncSubDatasetsEqualSequential) {
  // Prefetch inside the sub-datasets and on the input makes both pending at times.
  auto f = [](int64_t x) { return Sub(x).Prefetch(1); };
  Dataset<int64_t> input = Range(30).Prefetch(2);
  for (int64_t cycle : {2, 4}) {
    for (int64_t block : {1, 3}) {
      std::vector<std::string> want = Render(input.Interleave(f, cycle, block));
      EXPECT_EQ(Render(input.Interleave(f, cycle, block, 2, true)), want) << cycle << " " << block;
    }
  }
}

TEST(ParallelInterleaveTest, NondeterministicIsAPermutation) {
  const int64_t n = kSanitized ? 20 : 40;
  for (int64_t cycle : {1, 3, 6}) {
    for (int64_t block : {1, 2}) {
      std::vector<std::string> want = Render(Input(n).Interleave(SubOrError, cycle, block));
      std::sort(want.begin(), want.end());
      for (int64_t calls : {int64_t{1}, std::min<int64_t>(3, cycle)}) {
        Options options;
        options.thread_pool_size = 2;
        std::vector<std::string> got = Render(Input(n).Interleave(SubOrError, cycle, block, calls, false), options);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, want) << cycle << " " << block << " " << calls;
      }
    }
  }
  // Options::deterministic = false applies when the op leaves it unset.
  Options options;
  options.deterministic = false;
  std::vector<std::string> want = Render(Input(n).Interleave(SubOrError, 4, 1));
  std::sort(want.begin(), want.end());
  std::vector<std::string> got = Render(Input(n).Interleave(SubOrError, 4, 1, 4), options);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(ParallelInterleaveTest, KnownOrderAndErrors) {
  // tf.data's documented example: range(1, 6).interleave(lambda x: repeat(x, 6), cycle_length=2,
  // block_length=4).
  auto f = [](int64_t x) { return FromVector(std::vector<int64_t>(6, x)); };
  std::vector<std::string> got = Render(Range(1, 6).Interleave(f, 2, 4, 2, true));
  std::vector<std::string> want;
  for (int64_t x : {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}) {
    want.push_back(std::to_string(x));
  }
  EXPECT_EQ(got, want);

  Iterator<int64_t> it = Range(12).Interleave(SubOrError, 2, 1, 2, true).MakeIterator();
  bool saw_f_error = false;
  for (absl::StatusOr<int64_t> x : it) {
    if (!x.ok() && x.status().code() == absl::StatusCode::kNotFound) {
      saw_f_error = true;
      EXPECT_THAT(std::string(x.status().message()), ::testing::HasSubstr("ParallelInterleave (element 9)"));
    }
  }
  EXPECT_TRUE(saw_f_error);
}

TEST(ParallelInterleaveTest, ArgumentsAndDefinition) {
  for (auto [cycle, block, calls] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 1, 2}, {2, 0, 2}, {2, 1, -2}, {-3, 1, 2}, {2, 1, 3}}) {
    std::vector<std::string> got = Render(Range(3).Interleave(Sub, cycle, block, calls));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], "E" + std::to_string(static_cast<int>(absl::StatusCode::kInvalidArgument)));
  }
  Dataset<int64_t> ds = Range(3).Interleave(Sub, 5, 3, 4, false, "sub");
  EXPECT_EQ(ds.node()->op_name(), "ParallelInterleave");
  std::vector<Param> params = ds.node()->params();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(std::get<FunctionParam>(params[0].value).name, "sub");
  EXPECT_EQ(std::get<int64_t>(params[1].value), 5);
  EXPECT_EQ(std::get<int64_t>(params[2].value), 3);
  EXPECT_EQ(std::get<int64_t>(params[3].value), 4);
  EXPECT_FALSE(std::get<bool>(params[4].value));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Range(3).Interleave(Sub, 2, 3, 0).node()->op_name(), "Interleave");
  EXPECT_TRUE(Render(Range(0).Interleave(Sub, 2, 3, 2)).empty());
}

struct SlowElement {
  std::atomic<int64_t>* started;
  std::atomic<int64_t>* finished;
  int64_t operator()(int64_t v) const {
    started->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    finished->fetch_add(1);
    return v;
  }
};

struct SlowSub {
  std::atomic<int64_t>* started;
  std::atomic<int64_t>* finished;
  Dataset<int64_t> operator()(int64_t x) const { return Range(x * 1000, x * 1000 + 500).Map(SlowElement{started, finished}); }
};

TEST(ParallelInterleaveTest, DestroyMidStreamWithSlowSubDatasets) {
  for (int round = 0; round < 6; ++round) {
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> finished{0};
    {
      Options options;
      options.thread_pool_size = 2;
      Iterator<int64_t> it =
          Range(100).Interleave(SlowSub{&started, &finished}, 4, 2, 3, round % 2 == 0).MakeIterator(options);
      for (int i = 0; i < round * 3; ++i) ASSERT_TRUE(it.NextBlocking().ok());
    }
    EXPECT_EQ(started.load(), finished.load());
    int64_t after = started.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(started.load(), after);
  }
}

TEST(ParallelInterleaveTest, DestroyMidStreamWithAsyncSubDatasets) {
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  {
    auto f = [&started, &finished](int64_t x) { return SlowSub{&started, &finished}(x).Prefetch(2); };
    Iterator<int64_t> it = Range(100).Prefetch(1).Interleave(f, 3, 1, 2, false).MakeIterator();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
  EXPECT_EQ(started.load(), finished.load());
}

}  // namespace
}  // namespace parallel_interleave_test_file
}  // namespace sluice
