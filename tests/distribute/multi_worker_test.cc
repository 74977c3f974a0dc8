#include "sluice/distribute.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/engine/sync_wait.h"
#include "tests/test_util.h"

namespace sluice {
namespace multi_worker_test_file {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

template <class B>
using WorkerSteps = std::vector<std::vector<B>>;  // [step][local replica]

struct WorkerRun {
  std::vector<WorkerSteps<std::vector<int64_t>>> ints;
  std::vector<WorkerSteps<std::vector<std::string>>> strings;
  std::vector<absl::Status> errors;
  std::vector<std::string> stats;
};

// Runs `num_workers` workers as threads, each with its own MirroredStrategy sharing one agreement, each
// iterating whole steps of make(strategy) until the end (or the first error).
template <class B, class Make>
std::vector<WorkerSteps<B>> RunWorkers(int num_workers, int replicas, Make make, std::vector<absl::Status>* errors,
                                       std::vector<std::string>* stats = nullptr) {
  auto agreement = std::make_shared<InProcessWorkerAgreement>(num_workers);
  std::vector<WorkerSteps<B>> out(static_cast<size_t>(num_workers));
  errors->assign(static_cast<size_t>(num_workers), absl::OkStatus());
  if (stats != nullptr) stats->assign(static_cast<size_t>(num_workers), "");
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < num_workers; ++w) {
      threads.emplace_back([&, w] {
        MirroredStrategy strategy(replicas, num_workers, w, agreement);
        DistributedDataset<B> dist = make(strategy);
        if (stats != nullptr) (*stats)[static_cast<size_t>(w)] = dist.stats();
        DistributedIterator<B> it = dist.MakeIterator();
        for (int guard = 0; guard < 100000; ++guard) {
          auto next = it.NextBlocking();
          if (!next.ok()) {
            (*errors)[static_cast<size_t>(w)] = next.status();
            return;
          }
          if (!next->has_value()) return;
          out[static_cast<size_t>(w)].push_back((*next)->LocalResults());
        }
      });
    }
  }
  return out;
}

// DATA: every worker reads the same batches; step k of all workers together is batch k, split over the
// replicas in sync in global replica order. Every element once, in order; every worker the same steps.
TEST(MultiWorkerTest, DataPolicyDeliversEveryElementOnceInOrder) {
  for (int workers : {2, 3, 4}) {
    for (int replicas : {1, 2}) {
      for (auto [g, drop] : {std::pair<int64_t, bool>{5, false}, {6, true}, {2, false}}) {
        SCOPED_TRACE(testing::Message() << "W=" << workers << " R=" << replicas << " G=" << g << " drop=" << drop);
        const int64_t total = 37;
        std::vector<absl::Status> errors;
        std::vector<std::string> stats;
        auto runs = RunWorkers<std::vector<int64_t>>(
            workers, replicas,
            [g = g, drop = drop](const MirroredStrategy& s) {
              DistributeOptions options;
              options.auto_shard_policy = AutoShardPolicy::kData;
              return s.DistributeDataset(Range(total).BatchVectors(g, drop), options);
            },
            &errors, &stats);
        for (const absl::Status& e : errors) ASSERT_TRUE(e.ok()) << e;
        EXPECT_THAT(stats[0], HasSubstr("applied=DATA"));
        const size_t steps = runs[0].size();
        EXPECT_EQ(static_cast<int64_t>(steps), drop ? total / g : (total + g - 1) / g);
        std::vector<int64_t> seen;
        for (size_t k = 0; k < steps; ++k) {
          for (int w = 0; w < workers; ++w) {
            ASSERT_EQ(runs[static_cast<size_t>(w)].size(), steps) << "worker " << w;
            for (const auto& piece : runs[static_cast<size_t>(w)][k]) seen.insert(seen.end(), piece.begin(), piece.end());
          }
        }
        std::vector<int64_t> want;
        for (int64_t i = 0; i < (drop ? total / g * g : total); ++i) want.push_back(i);
        EXPECT_EQ(seen, want);
      }
    }
  }
}

TEST(MultiWorkerTest, AutoWithoutFilesIsData) {
  std::vector<absl::Status> errors;
  std::vector<std::string> stats;
  auto runs = RunWorkers<std::vector<int64_t>>(
      2, 2, [](const MirroredStrategy& s) { return s.DistributeDataset(Range(16).BatchVectors(8, true)); },
      &errors, &stats);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok());
  EXPECT_THAT(stats[1], HasSubstr("auto_shard_policy=AUTO applied=DATA"));
  ASSERT_EQ(runs[1].size(), 2u);
  EXPECT_EQ(runs[1][0], (std::vector<std::vector<int64_t>>{{4, 5}, {6, 7}}));  // replicas 2 and 3 of batch 0
}

// OFF: every worker reads everything, and each of its batches feeds num_workers steps (tf's rebatch).
TEST(MultiWorkerTest, OffPolicyEveryWorkerReadsEverything) {
  std::vector<absl::Status> errors;
  auto runs = RunWorkers<std::vector<int64_t>>(
      2, 1,
      [](const MirroredStrategy& s) {
        DistributeOptions options;
        options.auto_shard_policy = AutoShardPolicy::kOff;
        return s.DistributeDataset(Range(8).BatchVectors(4), options);
      },
      &errors);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok());
  using Steps = WorkerSteps<std::vector<int64_t>>;
  EXPECT_EQ(runs[0], (Steps{{{0, 1}}, {{2, 3}}, {{4, 5}}, {{6, 7}}}));
  EXPECT_EQ(runs[1], runs[0]);
}

// HINT: each worker's Shard(kShardHint, ...) becomes Shard(2, w) (tf.data's SHARD_HINT); its batches are its
// own, as under OFF and FILE, and each feeds num_workers steps.
TEST(MultiWorkerTest, HintPolicyReplacesTheShardPlaceholder) {
  std::vector<absl::Status> errors;
  std::vector<std::string> stats;
  auto runs = RunWorkers<std::vector<int64_t>>(
      2, 1,
      [](const MirroredStrategy& s) {
        DistributeOptions options;
        options.auto_shard_policy = AutoShardPolicy::kHint;
        return s.DistributeDataset(Range(16).Shard(kShardHint, 0).BatchVectors(4), options);
      },
      &errors, &stats);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok()) << errors[0] << " " << errors[1];
  EXPECT_THAT(stats[0], HasSubstr("auto_shard_policy=HINT applied=HINT"));
  using Steps = WorkerSteps<std::vector<int64_t>>;
  EXPECT_EQ(runs[0], (Steps{{{0, 2}}, {{4, 6}}, {{8, 10}}, {{12, 14}}}));
  EXPECT_EQ(runs[1], (Steps{{{1, 3}}, {{5, 7}}, {{9, 11}}, {{13, 15}}}));
  // Under another policy the placeholder is the iterator's error.
  runs = RunWorkers<std::vector<int64_t>>(
      2, 1,
      [](const MirroredStrategy& s) {
        return s.DistributeDataset(Range(16).Shard(kShardHint, 0).BatchVectors(4));
      },
      &errors);
  EXPECT_EQ(errors[0].code(), absl::StatusCode::kFailedPrecondition) << errors[0];
  EXPECT_THAT(std::string(errors[0].message()), HasSubstr("AutoShardPolicy HINT"));
}

// OFF with a static G over 2 workers x 2 replicas: worker w's piece sizes are worker 0's rotated by w * R
// (tf.distribute's batch_sizes_for_worker), so every global step takes exactly G elements.
TEST(MultiWorkerTest, StaticSizesRotatePerWorker) {
  std::vector<absl::Status> errors;
  auto runs = RunWorkers<std::vector<int64_t>>(
      2, 2,
      [](const MirroredStrategy& s) {
        DistributeOptions options;
        options.auto_shard_policy = AutoShardPolicy::kOff;
        return s.DistributeDataset(Range(14).BatchVectors(7, true), options);
      },
      &errors);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok());
  ASSERT_EQ(runs[0].size(), 4u);  // 2 batches, each feeding 2 steps
  ASSERT_EQ(runs[1].size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    size_t w0 = runs[0][k][0].size() + runs[0][k][1].size();
    size_t w1 = runs[1][k][0].size() + runs[1][k][1].size();
    EXPECT_EQ(w0 + w1, 7u) << "step " << k;
  }
  // Worker 0 cuts [2, 2, 2, 1], worker 1 [2, 1, 2, 2].
  EXPECT_EQ(runs[0][0], (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(runs[0][1], (std::vector<std::vector<int64_t>>{{4, 5}, {6}}));
  EXPECT_EQ(runs[1][0], (std::vector<std::vector<int64_t>>{{0, 1}, {2}}));
  EXPECT_EQ(runs[1][1], (std::vector<std::vector<int64_t>>{{3, 4}, {5, 6}}));
}

class FileShardTest : public ::testing::Test {
 protected:
  // File i holds i + 1 lines "f<i>-<j>".
  void SetUp() override {
    for (int i = 0; i < 5; ++i) {
      std::string path = testing_util::TempPath(absl::StrCat("shard_", i, ".txt"));
      std::string text;
      for (int j = 0; j <= i; ++j) {
        absl::StrAppend(&text, "f", i, "-", j, "\n");
        all_lines_.push_back(absl::StrCat("f", i, "-", j));
      }
      testing_util::WriteFile(path, text);
      files_.push_back(path);
    }
  }
  void TearDown() override {
    for (const std::string& f : files_) std::remove(f.c_str());
  }

  static std::vector<std::string> Flatten(const std::vector<WorkerSteps<std::vector<std::string>>>& runs) {
    std::vector<std::string> out;
    for (const auto& worker : runs) {
      for (const auto& step : worker) {
        for (const auto& piece : step) out.insert(out.end(), piece.begin(), piece.end());
      }
    }
    return out;
  }

  std::vector<std::string> files_;
  std::vector<std::string> all_lines_;
};

// FILE over a file source: worker w reads files w, w + W, ...; workers with less data get empty batches
// until every worker is done, so all see the same number of steps; every line is read once.
TEST_F(FileShardTest, FilePolicyShardsTheFileListWithAgreement) {
  std::vector<absl::Status> errors;
  std::vector<std::string> stats;
  auto runs = RunWorkers<std::vector<std::string>>(
      2, 2,
      [this](const MirroredStrategy& s) {
        DistributeOptions options;
        options.auto_shard_policy = AutoShardPolicy::kFile;
        return s.DistributeDataset(TextLines(files_).Batch(4), options);
      },
      &errors, &stats);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok()) << errors[0] << errors[1];
  EXPECT_THAT(stats[0], HasSubstr("applied=FILE (TextLines: 5 files)"));
  // Worker 0: files 0, 2, 4 = 9 lines = batches of 4, 4, 1, each feeding 2 steps: 6 steps. Worker 1:
  // files 1, 3 = 6 lines = 2 batches = 4 steps, then 2 steps of empty batches.
  ASSERT_EQ(runs[0].size(), 6u);
  ASSERT_EQ(runs[1].size(), 6u);
  EXPECT_EQ(runs[0][0], (std::vector<std::vector<std::string>>{{"f0-0"}, {"f2-0"}}));
  for (size_t k = 4; k < 6; ++k) {
    for (const auto& piece : runs[1][k]) EXPECT_TRUE(piece.empty());
  }
  EXPECT_THAT(Flatten(runs), UnorderedElementsAreArray(all_lines_));
}

// ListFiles (shuffled, unseeded) -> Interleave(TextLines): FILE cuts the sorted list before the shuffle, so
// the workers' shares are disjoint whatever order each shuffles into.
TEST_F(FileShardTest, AutoShardsListFilesBeforeItsShuffle) {
  const std::string pattern = testing_util::TempPath("shard_*.txt");
  for (int workers : {2, 3}) {
    SCOPED_TRACE(workers);
    std::vector<absl::Status> errors;
    std::vector<std::string> stats;
    auto runs = RunWorkers<std::vector<std::string>>(
        workers, 1,
        [&pattern](const MirroredStrategy& s) {
          auto lines = ListFiles({pattern}).Interleave([](const std::string& f) { return TextLines({f}); }, 2);
          return s.DistributeDataset(lines.Batch(3));
        },
        &errors, &stats);
    for (const absl::Status& e : errors) ASSERT_TRUE(e.ok()) << e;
    EXPECT_THAT(stats[0], HasSubstr("applied=FILE (ListFiles: 5 files)"));
    for (const auto& worker : runs) EXPECT_EQ(worker.size(), runs[0].size());
    EXPECT_THAT(Flatten(runs), UnorderedElementsAreArray(all_lines_));
  }
}

TEST_F(FileShardTest, GraphAnalysis) {
  const std::string pattern = testing_util::TempPath("shard_*.txt");
  auto listed = ListFiles({pattern}, /*shuffle=*/false);
  EXPECT_EQ(listed.node()->op_name(), "ListFiles");
  EXPECT_EQ(listed.Cardinality(), 5);
  auto lines = listed.Interleave([](const std::string& f) { return TextLines({f}); }, 2).Batch(4, true).Prefetch(2);
  EXPECT_EQ(distribute::FindFileSource(*lines.node()), listed.node().get());
  EXPECT_EQ(distribute::FindStaticBatchSize(*lines.node()), std::optional<int64_t>(4));
  EXPECT_EQ(distribute::FindStaticBatchSize(*Range(9).BatchVectors(4).node()), std::nullopt);
  EXPECT_EQ(distribute::FindStaticBatchSize(
                *Range(9).BatchVectors(4, true).Map([](std::vector<int64_t> v) { return v; }).node()),
            std::nullopt);  // a Map may change the batch size
  EXPECT_EQ(distribute::FindFileSource(*Range(3).node()), nullptr);
}

TEST_F(FileShardTest, FileErrors) {
  MirroredStrategy strategy(1, 6, 0);
  DistributeOptions file;
  file.auto_shard_policy = AutoShardPolicy::kFile;
  auto too_few = strategy.DistributeDataset(TextLines(files_).Batch(2), file);
  EXPECT_EQ(too_few.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_few.status().message()), HasSubstr("fewer than the 6 workers"));
  EXPECT_THAT(std::string(too_few.status().message()), HasSubstr("DATA"));
  auto it = too_few.MakeIterator();
  EXPECT_EQ(it.NextBlocking().status().code(), absl::StatusCode::kInvalidArgument);
  auto end = it.NextBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  // AUTO on a file-based source with too few files fails too (tf.distribute's documented behaviour).
  EXPECT_EQ(strategy.DistributeDataset(TextLines(files_).Batch(2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // FILE with no file source at all.
  auto no_files = strategy.DistributeDataset(Range(10).BatchVectors(2), file);
  EXPECT_THAT(std::string(no_files.status().message()), HasSubstr("no file-based source"));
  // DATA is always possible.
  DistributeOptions data;
  data.auto_shard_policy = AutoShardPolicy::kData;
  EXPECT_TRUE(strategy.DistributeDataset(TextLines(files_).Batch(2), data).status().ok());
  // One worker never shards: FILE is not applied and not an error.
  MirroredStrategy single(2);
  auto whole = single.DistributeDataset(TextLines(files_).Batch(2), file);
  EXPECT_TRUE(whole.status().ok());
  EXPECT_EQ(whole.applied_shard_policy(), AutoShardPolicy::kOff);
}

TEST(MultiWorkerTest, FromFunctionSeesItsPipelineId) {
  std::vector<absl::Status> errors;
  auto runs = RunWorkers<std::vector<int64_t>>(
      2, 2,
      [](const MirroredStrategy& s) {
        return s.DistributeDatasetsFromFunction([](const InputContext& c) {
          // Worker 1's shard is shorter: its replicas get empty batches while worker 0 still has data.
          return Range(c.input_pipeline_id == 0 ? 10 : 4).Shard(1, 0).BatchVectors(2);
        });
      },
      &errors);
  ASSERT_TRUE(errors[0].ok() && errors[1].ok());
  ASSERT_EQ(runs[0].size(), 3u);
  ASSERT_EQ(runs[1].size(), 3u);
  EXPECT_EQ(runs[0][2], (std::vector<std::vector<int64_t>>{{8, 9}, {}}));
  EXPECT_EQ(runs[1][1], (std::vector<std::vector<int64_t>>{{}, {}}));
}

TEST(InProcessWorkerAgreementTest, OrsTheBitsOfEveryRound) {
  InProcessWorkerAgreement agreement(3);
  std::vector<std::vector<bool>> results(3);
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < 3; ++w) {
      threads.emplace_back([&, w] {
        for (int64_t step = 0; step < 20; ++step) {
          // Round k: only worker k mod 4 has data (none when k mod 4 == 3).
          absl::StatusOr<bool> any = SyncWait(agreement.AnyWorkerHasData(w, /*epoch=*/0, step, step % 4 == w));
          ASSERT_TRUE(any.ok()) << any.status();
          results[static_cast<size_t>(w)].push_back(*any);
        }
      });
    }
  }
  for (int w = 0; w < 3; ++w) {
    ASSERT_EQ(results[static_cast<size_t>(w)].size(), 20u);
    for (int64_t step = 0; step < 20; ++step) EXPECT_EQ(results[static_cast<size_t>(w)][step], step % 4 != 3);
  }
  EXPECT_EQ(agreement.rounds(), 20);
  EXPECT_EQ(SyncWait(agreement.AnyWorkerHasData(7, 0, 0, true)).status().code(), absl::StatusCode::kInvalidArgument);
}

// A worker whose iterator is destroyed while it waits for the others aborts the agreement: the others get
// Cancelled instead of waiting forever, and the destruction does not hang.
TEST(InProcessWorkerAgreementTest, WorkerLeavingAbortsTheOthers) {
  auto agreement = std::make_shared<InProcessWorkerAgreement>(2);
  {
    MirroredStrategy worker0(1, 2, 0, agreement);
    std::optional<DistributedIterator<std::vector<int64_t>>> it(
        worker0.DistributeDataset(Range(10).BatchVectors(2)).MakeIterator());
    ReplicaIterator<std::vector<int64_t>> replica = it->Replica(0);
    std::jthread waiter([replica]() mutable {
      auto next = replica.NextBlocking();  // blocks: worker 1 never arrives
      EXPECT_TRUE(next.ok());
      if (next.ok()) {
        EXPECT_FALSE(next->has_value());  // woken by the destruction: the end
      }
    });
    for (int i = 0; i < 5000 && agreement->waiting() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(agreement->waiting(), 1);
    it.reset();  // destroyed while worker 0's producer waits in the agreement
  }
  MirroredStrategy worker1(1, 2, 1, agreement);
  auto it1 = worker1.DistributeDataset(Range(10).BatchVectors(2)).MakeIterator();
  auto first = it1.NextBlocking();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(first.status().message()), HasSubstr("worker 0"));
  auto end = it1.NextBlocking();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());

  // The next epoch (each worker's second iterator) is not affected.
  std::vector<int64_t> counts(2, 0);
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, w] {
        MirroredStrategy strategy(1, 2, w, agreement);
        DistributeOptions data;
        data.auto_shard_policy = AutoShardPolicy::kData;
        auto it = strategy.DistributeDataset(Range(10).BatchVectors(2), data).MakeIterator();
        while (auto step = it.GetNextAsOptional()) counts[static_cast<size_t>(w)] += static_cast<int64_t>((*step)[0].size());
        EXPECT_TRUE(it.status().ok()) << it.status();
      });
    }
  }
  EXPECT_EQ(counts[0] + counts[1], 10);
}

}  // namespace
}  // namespace multi_worker_test_file
}  // namespace sluice
