#include "sluice/distribute/detail/rebatch.h"

#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute/input_context.h"

namespace sluice::distribute {
namespace rebatch_test_file {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Range = std::pair<int64_t, int64_t>;

TEST(StaticBatchSizesTest, TensorFlowDocExampleSevenOverTwoWorkersOfTwo) {
  // batch_sizes_for_worker's docstring: G=7, W=2, R=2 gives [2,2,2,1] and [2,1,2,2].
  EXPECT_THAT(*StaticBatchSizesForWorker(7, 2, 2, 0), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*StaticBatchSizesForWorker(7, 2, 2, 1), ElementsAre(2, 1, 2, 2));
}

TEST(StaticBatchSizesTest, SingleWorkerCeilThenFloor) {
  EXPECT_THAT(*StaticBatchSizesForWorker(10, 1, 4, 0), ElementsAre(3, 3, 2, 2));
  EXPECT_THAT(*StaticBatchSizesForWorker(8, 1, 4, 0), ElementsAre(2, 2, 2, 2));
  EXPECT_THAT(*StaticBatchSizesForWorker(1, 1, 1, 0), ElementsAre(1));
}

TEST(StaticBatchSizesTest, GlobalBatchSmallerThanReplicasGivesEmptyPieces) {
  EXPECT_THAT(*StaticBatchSizesForWorker(2, 1, 3, 0), ElementsAre(1, 1, 0));
  // N = 6, G = 4: worker 0 [1,1,1,1,0,0]; worker 1 rotated by 2, worker 2 by 4.
  EXPECT_THAT(*StaticBatchSizesForWorker(4, 3, 2, 0), ElementsAre(1, 1, 1, 1, 0, 0));
  EXPECT_THAT(*StaticBatchSizesForWorker(4, 3, 2, 1), ElementsAre(1, 1, 0, 0, 1, 1));
  EXPECT_THAT(*StaticBatchSizesForWorker(4, 3, 2, 2), ElementsAre(0, 0, 1, 1, 1, 1));
}

TEST(StaticBatchSizesTest, RotationIsWorkerZerosRotatedLeftByWorkerTimesReplicas) {
  EXPECT_THAT(*StaticBatchSizesForWorker(11, 4, 1, 0), ElementsAre(3, 3, 3, 2));
  EXPECT_THAT(*StaticBatchSizesForWorker(11, 4, 1, 1), ElementsAre(3, 3, 2, 3));
  EXPECT_THAT(*StaticBatchSizesForWorker(11, 4, 1, 3), ElementsAre(2, 3, 3, 3));
}

// The properties batch_sizes_for_worker documents as (A)-(D), over many topologies and sizes.
TEST(StaticBatchSizesTest, PropertiesHoldForManyCombinations) {
  for (int workers = 1; workers <= 5; ++workers) {
    for (int replicas = 1; replicas <= 4; ++replicas) {
      const int n = workers * replicas;
      for (int64_t g = 1; g <= 3 * n + 2; ++g) {
        SCOPED_TRACE(testing::Message() << "G=" << g << " W=" << workers << " R=" << replicas);
        std::vector<std::vector<int64_t>> lists;
        for (int w = 0; w < workers; ++w) {
          absl::StatusOr<std::vector<int64_t>> sizes = StaticBatchSizesForWorker(g, workers, replicas, w);
          ASSERT_TRUE(sizes.ok()) << sizes.status();
          ASSERT_EQ(sizes->size(), static_cast<size_t>(n));                        // (A)
          EXPECT_EQ(std::accumulate(sizes->begin(), sizes->end(), int64_t{0}), g);  // (B)
          for (int64_t s : *sizes) {                                                // (D)
            EXPECT_TRUE(s == g / n || s == g / n + 1) << s;
          }
          lists.push_back(*std::move(sizes));
        }
        for (int step = 0; step < workers; ++step) {  // (C): every global step consumes exactly G
          int64_t total = 0;
          for (int w = 0; w < workers; ++w) {
            for (int r = 0; r < replicas; ++r) total += lists[w][step * replicas + r];
          }
          EXPECT_EQ(total, g) << "step " << step;
        }
        // The ceil pieces are exactly G mod N of them.
        int64_t num_ceil = 0;
        for (int64_t s : lists[0]) num_ceil += (s == g / n + 1 && g % n != 0) ? 1 : 0;
        EXPECT_EQ(num_ceil, g % n);
      }
    }
  }
}

TEST(StaticBatchSizesTest, RejectsBadArguments) {
  absl::StatusOr<std::vector<int64_t>> zero = StaticBatchSizesForWorker(0, 1, 2, 0);
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr("global batch size must be >= 1, got 0"));
  EXPECT_EQ(StaticBatchSizesForWorker(-3, 1, 2, 0).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<int64_t>> workers = StaticBatchSizesForWorker(8, 0, 2, 0);
  EXPECT_THAT(workers.status().message(), HasSubstr("num_workers must be >= 1, got 0"));
  absl::StatusOr<std::vector<int64_t>> replicas = StaticBatchSizesForWorker(8, 2, -1, 0);
  EXPECT_THAT(replicas.status().message(), HasSubstr("replicas_per_worker must be >= 1, got -1"));
  absl::StatusOr<std::vector<int64_t>> index = StaticBatchSizesForWorker(8, 2, 2, 2);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(index.status().message(), HasSubstr("worker_index 2 out of range [0, 2)"));
  EXPECT_FALSE(StaticBatchSizesForWorker(8, 2, 2, -1).ok());
  EXPECT_FALSE(StaticBatchSizesForWorker(8, 1 << 16, 1 << 16, 0).ok());
}

TEST(SplitDynamicBatchTest, IssueExamples) {
  // A batch of 4 over 3 replicas: [0,1], [2,3], [].
  EXPECT_THAT(SplitDynamicBatch(4, 3), ElementsAre(Range{0, 2}, Range{2, 2}, Range{4, 0}));
  // A final batch [4,5] over 2 replicas: [4], [5].
  EXPECT_THAT(SplitDynamicBatch(2, 2), ElementsAre(Range{0, 1}, Range{1, 1}));
}

TEST(SplitDynamicBatchTest, ShortAndEmptyTrailingPieces) {
  EXPECT_THAT(SplitDynamicBatch(7, 3), ElementsAre(Range{0, 3}, Range{3, 3}, Range{6, 1}));
  EXPECT_THAT(SplitDynamicBatch(1, 3), ElementsAre(Range{0, 1}, Range{1, 0}, Range{1, 0}));
  EXPECT_THAT(SplitDynamicBatch(0, 2), ElementsAre(Range{0, 0}, Range{0, 0}));
  EXPECT_THAT(SplitDynamicBatch(6, 2), ElementsAre(Range{0, 3}, Range{3, 3}));
  EXPECT_THAT(SplitDynamicBatch(-5, 2), ElementsAre(Range{0, 0}, Range{0, 0}));
  EXPECT_TRUE(SplitDynamicBatch(5, 0).empty());
}

TEST(SplitDynamicBatchTest, PiecesTileTheBatchInOrder) {
  for (int64_t b = 0; b <= 40; ++b) {
    for (int n = 1; n <= 9; ++n) {
      std::vector<Range> pieces = SplitDynamicBatch(b, n);
      ASSERT_EQ(pieces.size(), static_cast<size_t>(n));
      int64_t next = 0;
      const int64_t ceil = (b + n - 1) / n;
      for (const Range& p : pieces) {
        EXPECT_EQ(p.first, next);
        EXPECT_LE(p.second, ceil);
        next += p.second;
      }
      EXPECT_EQ(next, b) << "b=" << b << " n=" << n;
    }
  }
}

TEST(RebatchPlanTest, StaticPlanFeedsReplicasForNumWorkersSteps) {
  absl::StatusOr<RebatchPlan> w0 = RebatchPlan::Create(7, 2, 2, 0);
  absl::StatusOr<RebatchPlan> w1 = RebatchPlan::Create(7, 2, 2, 1);
  ASSERT_TRUE(w0.ok() && w1.ok());
  EXPECT_EQ(w0->steps_per_input_batch(), 2);
  EXPECT_EQ(w0->num_replicas_in_sync(), 4);
  auto s0 = w0->SplitInputBatch(7);
  auto s1 = w1->SplitInputBatch(7);
  ASSERT_TRUE(s0.ok() && s1.ok());
  // The docstring's walk-through: step 1 is A0A1 | A2A3 | B0B1 | B2, step 2 A4A5 | A6 | B3B4 | B5B6.
  EXPECT_THAT(*s0, ElementsAre(ElementsAre(Range{0, 2}, Range{2, 2}), ElementsAre(Range{4, 2}, Range{6, 1})));
  EXPECT_THAT(*s1, ElementsAre(ElementsAre(Range{0, 2}, Range{2, 1}), ElementsAre(Range{3, 2}, Range{5, 2})));
}

TEST(RebatchPlanTest, StaticPlanEveryStepConsumesGlobalBatch) {
  for (int workers = 1; workers <= 4; ++workers) {
    for (int replicas = 1; replicas <= 3; ++replicas) {
      for (int64_t g = 1; g <= 20; ++g) {
        std::vector<int64_t> step_totals(static_cast<size_t>(workers), 0);
        for (int w = 0; w < workers; ++w) {
          absl::StatusOr<RebatchPlan> plan = RebatchPlan::Create(g, workers, replicas, w);
          ASSERT_TRUE(plan.ok()) << plan.status();
          auto steps = plan->SplitInputBatch(g);
          ASSERT_TRUE(steps.ok()) << steps.status();
          ASSERT_EQ(steps->size(), static_cast<size_t>(workers));
          int64_t next = 0;
          for (size_t step = 0; step < steps->size(); ++step) {
            ASSERT_EQ((*steps)[step].size(), static_cast<size_t>(replicas));
            for (const Range& r : (*steps)[step]) {
              EXPECT_EQ(r.first, next);
              next += r.second;
              step_totals[step] += r.second;
            }
          }
          EXPECT_EQ(next, g);
        }
        for (int64_t total : step_totals) EXPECT_EQ(total, g) << "G=" << g << " W=" << workers;
      }
    }
  }
}

TEST(RebatchPlanTest, DynamicPlanSplitsIntoAllReplicasPieces) {
  absl::StatusOr<RebatchPlan> plan = RebatchPlan::Create(std::nullopt, 1, 3, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->static_global_batch().has_value());
  auto steps = plan->SplitInputBatch(4);
  ASSERT_TRUE(steps.ok());
  EXPECT_THAT(*steps, ElementsAre(ElementsAre(Range{0, 2}, Range{2, 2}, Range{4, 0})));
  // Two workers of one replica each: a worker's batch of 3 is split in 2 and feeds two steps.
  absl::StatusOr<RebatchPlan> multi = RebatchPlan::Create(std::nullopt, 2, 1, 1);
  ASSERT_TRUE(multi.ok());
  auto multi_steps = multi->SplitInputBatch(3);
  ASSERT_TRUE(multi_steps.ok());
  EXPECT_THAT(*multi_steps, ElementsAre(ElementsAre(Range{0, 2}), ElementsAre(Range{2, 1})));
}

TEST(RebatchPlanTest, Errors) {
  EXPECT_EQ(RebatchPlan::Create(0, 1, 1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RebatchPlan::Create(std::nullopt, 2, 1, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RebatchPlan::Create(std::nullopt, 1, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<RebatchPlan> plan = RebatchPlan::Create(8, 2, 2, 1);
  ASSERT_TRUE(plan.ok());
  auto wrong = plan->SplitInputBatch(5);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("worker 1 got an input batch of 5 elements, but the static global batch size is 8"));
  absl::StatusOr<RebatchPlan> dynamic = RebatchPlan::Create(std::nullopt, 1, 2, 0);
  ASSERT_TRUE(dynamic.ok());
  EXPECT_EQ(dynamic->SplitInputBatch(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InputContextTest, PerReplicaBatchSize) {
  InputContext ctx{.num_input_pipelines = 2, .input_pipeline_id = 1, .num_replicas_in_sync = 4};
  absl::StatusOr<int64_t> size = ctx.GetPerReplicaBatchSize(64);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 16);
  EXPECT_EQ(*InputContext{}.GetPerReplicaBatchSize(5), 5);
}

TEST(InputContextTest, NotDivisibleUsesTensorFlowsMessage) {
  InputContext ctx{.num_replicas_in_sync = 3};
  absl::StatusOr<int64_t> size = ctx.GetPerReplicaBatchSize(10);
  EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(size.status().message(), "The `global_batch_size` 10 is not divisible by `num_replicas_in_sync` 3");
}

TEST(InputContextTest, RejectsNonPositiveReplicasAndNegativeBatch) {
  InputContext zero{.num_replicas_in_sync = 0};
  EXPECT_THAT(zero.GetPerReplicaBatchSize(8).status().message(), HasSubstr("must be positive, got 0"));
  EXPECT_EQ(InputContext{}.GetPerReplicaBatchSize(-2).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValueContextTest, Defaults) {
  ValueContext v;
  EXPECT_EQ(v.replica_id_in_sync_group, 0);
  EXPECT_EQ(v.num_replicas_in_sync, 1);
}

}  // namespace
}  // namespace rebatch_test_file
}  // namespace sluice::distribute
