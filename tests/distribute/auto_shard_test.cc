// Auto-shard by FILE names its target by node path: the decision is data that survives a rebuild of the
// graph, and each iterator resolves it against its own root.
#include "sluice/distribute/auto_shard.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute/distributed_iterator.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/node_path.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace sluice {
namespace auto_shard_test_file {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AutoShardPathTest : public ::testing::Test {
 protected:
  // File i holds the lines "f<i>-0" and "f<i>-1".
  void SetUp() override {
    for (int i = 0; i < 4; ++i) {
      std::string path = testing_util::TempPath(absl::StrCat("path_shard_", i, ".txt"));
      testing_util::WriteFile(path, absl::StrCat("f", i, "-0\nf", i, "-1\n"));
      files_.push_back(path);
    }
  }

  // Zip(Range, TextLines(files)).Map(...).Batch(2): the file source is at /0/0/1. Built anew each call,
  // as another process would rebuild it.
  Dataset<std::vector<std::string>> Pipeline() const {
    return Zip(Range(100), TextLines(files_))
        .Map([](std::pair<int64_t, std::string> p) { return p.second; })
        .Batch(2);
  }
  // Zip(TextLines(files 0-1), TextLines(files 0-3)).Map(...).Batch(2): file sources at /0/0/0 and /0/0/1.
  Dataset<std::vector<std::string>> TwoFileBranches() const {
    return Zip(TextLines({files_[0], files_[1]}), TextLines(files_))
        .Map([](std::pair<std::string, std::string> p) { return p.first + "|" + p.second; })
        .Batch(2);
  }

  std::vector<std::string> files_;
};

TEST_F(AutoShardPathTest, TheDecisionNamesEveryFileSourceByPath) {
  using distribute::FileShardTarget;
  auto ds = TwoFileBranches();
  absl::StatusOr<distribute::ShardDecision> decision =
      distribute::DecideShardPolicy(*ds.node(), AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->applied, AutoShardPolicy::kFile);
  EXPECT_THAT(decision->file_sources,
              ElementsAre(FileShardTarget{"/0/0/0", "TextLines", 2}, FileShardTarget{"/0/0/1", "TextLines", 4}));
  EXPECT_EQ(decision->reason, "");
  decision = distribute::DecideShardPolicy(*ds.node(), AutoShardPolicy::kAuto, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->applied, AutoShardPolicy::kFile);
  EXPECT_EQ(decision->file_sources.size(), 2u);
  // Every source needs a file per worker, AUTO too (tf.data's require_non_empty shard).
  for (AutoShardPolicy policy : {AutoShardPolicy::kFile, AutoShardPolicy::kAuto}) {
    decision = distribute::DecideShardPolicy(*ds.node(), policy, 3);
    EXPECT_EQ(decision.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(decision.status().message()),
                HasSubstr("TextLines source at /0/0/0 has 2 file(s), fewer than the 3 workers"));
  }
  decision = distribute::DecideShardPolicy(*ds.node(), AutoShardPolicy::kAuto, 1);
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->applied, AutoShardPolicy::kOff);
  EXPECT_TRUE(decision->file_sources.empty());
  // The first file source in depth-first order, whether or not FILE can use it.
  EXPECT_EQ(distribute::FindFileSourcePath(*Pipeline().node()), std::optional<std::string>("/0/0/1"));
  EXPECT_EQ(distribute::FindFileSourcePath(*Range(3).Batch(2).node()), std::nullopt);
}

// tf.data's walk (auto_shard.cc): a branch that reaches an op which is neither a file source, nor passes
// elements through, nor a zip or concatenation cannot be sharded by file: FILE fails, AUTO shards by data.
TEST_F(AutoShardPathTest, ABranchWithoutAFileSourceMakesFileFailAndAutoShardByData) {
  struct Case {
    Dataset<std::vector<std::string>> dataset;
    std::string stop;  // the op and path where the walk stopped
  };
  const std::vector<Case> cases = {
      {Pipeline(), "Range at /0/0/0"},
      // Enumerate is a zip with a range in tf.data.
      {TextLines(files_).Enumerate().Map([](std::pair<int64_t, std::string> p) { return p.second; }).Batch(2),
       "Enumerate at /0/0"},
      {SampleFromDatasets<std::string>({TextLines(files_), TextLines(files_)}, {0.5, 0.5}, 1).Batch(2),
       "SampleFromDatasets at /0"},
      {FromVector<std::string>({"a", "b"}).Batch(2), "FromVector at /0"},
      {TextLines(files_).Concatenate(FromVector<std::string>({"x"})).Batch(2), "FromVector at /0/1"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<distribute::FileShardTarget>> targets =
        distribute::FindFileShardTargets(*c.dataset.node());
    EXPECT_EQ(targets.status().code(), absl::StatusCode::kNotFound) << c.stop;
    EXPECT_THAT(std::string(targets.status().message()), HasSubstr(c.stop));
    absl::StatusOr<distribute::ShardDecision> file =
        distribute::DecideShardPolicy(*c.dataset.node(), AutoShardPolicy::kFile, 2);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << c.stop;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(c.stop));
    absl::StatusOr<distribute::ShardDecision> automatic =
        distribute::DecideShardPolicy(*c.dataset.node(), AutoShardPolicy::kAuto, 2);
    ASSERT_TRUE(automatic.ok()) << automatic.status();
    EXPECT_EQ(automatic->applied, AutoShardPolicy::kData) << c.stop;
    EXPECT_THAT(automatic->reason, HasSubstr(c.stop));
    EXPECT_TRUE(automatic->file_sources.empty());
  }
}

// Zip and Concatenate of two file branches under FILE: every worker reads its share of each branch, so
// the workers' elements are disjoint and together the whole dataset.
TEST_F(AutoShardPathTest, EveryFileBranchIsShardedAndTheWorkersPartitionTheData) {
  std::vector<std::string> more;
  for (int i = 0; i < 4; ++i) {
    std::string path = testing_util::TempPath(absl::StrCat("path_shard_more_", i, ".txt"));
    testing_util::WriteFile(path, absl::StrCat("g", i, "-0\n"));
    more.push_back(path);
  }
  const std::vector<std::pair<std::string, Dataset<std::string>>> pipelines = {
      {"concatenate",
       TextLines(files_)
           .Concatenate(ListFiles(more).Interleave([](std::string f) { return TextLines({f}); }, 2, 1))
           .Map([](std::string s) { return s + "!"; })},
      {"zip", Zip(TextLines(files_), TextLines(files_).Skip(0)).Map([](std::pair<std::string, std::string> p) {
         return p.first + "|" + p.second;
       })},
  };
  for (const auto& [name, dataset] : pipelines) {
    const std::vector<std::string> whole = test_ops::Values(dataset);
    for (int workers : {2, 4}) {
      absl::StatusOr<distribute::ShardDecision> decision =
          distribute::DecideShardPolicy(*dataset.node(), AutoShardPolicy::kAuto, workers);
      ASSERT_TRUE(decision.ok()) << decision.status();
      ASSERT_EQ(decision->applied, AutoShardPolicy::kFile) << name;
      ASSERT_EQ(decision->file_sources.size(), 2u) << name;
      std::multiset<std::string> seen;
      for (int w = 0; w < workers; ++w) {
        absl::StatusOr<IteratorContext::FileShard> shard =
            distribute::MakeFileShard(*dataset.node(), decision->file_sources, workers, w);
        ASSERT_TRUE(shard.ok()) << shard.status();
        auto context = std::make_shared<IteratorContext>();
        context->file_shard = *shard;
        Iterator<std::string> it(dataset.node()->MakeStream(context), context);
        std::vector<std::string> mine;
        for (absl::StatusOr<std::string> e : it) {
          ASSERT_TRUE(e.ok()) << e.status();
          mine.push_back(*e);
        }
        EXPECT_EQ(mine.size(), whole.size() / workers) << name << " worker " << w << " of " << workers;
        seen.insert(mine.begin(), mine.end());
      }
      EXPECT_EQ(seen, std::multiset<std::string>(whole.begin(), whole.end())) << name << " " << workers;
    }
  }
}

TEST_F(AutoShardPathTest, ResolvingAPathChecksItNamesAFileSource) {
  auto ds = Pipeline();
  absl::StatusOr<const OpNode*> source = distribute::ResolveFileSource(*ds.node(), "/0/0/1");
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_EQ((*source)->op_name(), "TextLines");
  absl::StatusOr<const OpNode*> range = distribute::ResolveFileSource(*ds.node(), "/0/0/0");
  EXPECT_EQ(range.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(range.status().message()), HasSubstr("'/0/0/0' is Range, not a file-based source"));
  absl::StatusOr<const OpNode*> gone = distribute::ResolveFileSource(*ds.node(), "/0/0/2");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gone.status().message()), HasSubstr("auto-shard FILE"));
  EXPECT_EQ(distribute::ResolveFileSource(*ds.node(), "0/0").status().code(), absl::StatusCode::kInvalidArgument);
}

// The path decided on one graph shards an equal graph built separately (what a worker process does).
TEST_F(AutoShardPathTest, APathDecidedOnOneGraphShardsARebuiltOne) {
  absl::StatusOr<distribute::ShardDecision> decision =
      distribute::DecideShardPolicy(*TwoFileBranches().node(), AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  auto rebuilt = TwoFileBranches();
  absl::StatusOr<IteratorContext::FileShard> shard =
      distribute::MakeFileShard(*rebuilt.node(), decision->file_sources, 2, 1);
  ASSERT_TRUE(shard.ok()) << shard.status();
  auto context = std::make_shared<IteratorContext>();
  context->file_shard = *shard;
  Iterator<std::vector<std::string>> it(rebuilt.node()->MakeStream(context), context);
  std::vector<std::vector<std::string>> batches;
  for (absl::StatusOr<std::vector<std::string>> batch : it) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    batches.push_back(*batch);
  }
  // File 1 of the first branch beside files 1 and 3 of the second: the zip ends with the shorter share.
  EXPECT_THAT(batches, ElementsAre(ElementsAre("f1-0|f1-0", "f1-1|f1-1")));
}

// Through a DistributedDataset: the configuration carries the path, resolved when each iterator is made.
TEST_F(AutoShardPathTest, DistributedIteratorsResolveTheConfiguredPath) {
  auto rebuilt = Pipeline();
  detail::DistributeConfig config;
  config.num_workers = 2;
  config.worker_index = 0;
  config.replicas_per_worker = 1;
  config.requested_policy = AutoShardPolicy::kFile;
  config.applied_policy = AutoShardPolicy::kFile;
  config.file_sources = {{"/0/0/1", "TextLines", 4}};
  absl::StatusOr<distribute::RebatchPlan> plan = distribute::RebatchPlan::Create(std::nullopt, 2, 1, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  config.plan = *plan;
  DistributedDataset<std::vector<std::string>> dist(rebuilt.node(), config);
  EXPECT_THAT(dist.stats(), HasSubstr("applied=FILE (TextLines: 4 files)"));
  std::vector<std::string> lines;
  for (int epoch = 0; epoch < 2; ++epoch) {
    lines.clear();
    DistributedIterator<std::vector<std::string>> it = dist.MakeIterator();
    for (absl::StatusOr<PerReplica<std::vector<std::string>>> step : it) {
      ASSERT_TRUE(step.ok()) << step.status();
      for (const std::vector<std::string>& piece : step->LocalResults()) {
        lines.insert(lines.end(), piece.begin(), piece.end());
      }
    }
    EXPECT_THAT(lines, ElementsAre("f0-0", "f0-1", "f2-0", "f2-1"));  // worker 0: files 0 and 2
  }

  // A path that does not name a file source of this graph is the iterator's one error step.
  for (auto [path, code] : {std::pair<std::string, absl::StatusCode>{"/0/0/0", absl::StatusCode::kFailedPrecondition},
                            {"/3", absl::StatusCode::kNotFound}}) {
    detail::DistributeConfig wrong = config;
    wrong.file_sources = {{path, "TextLines", 4}};
    DistributedIterator<std::vector<std::string>> it =
        DistributedDataset<std::vector<std::string>>(rebuilt.node(), wrong).MakeIterator();
    auto first = it.NextBlocking();
    EXPECT_EQ(first.status().code(), code) << first.status();
    EXPECT_THAT(std::string(first.status().message()), HasSubstr(path));
    auto end = it.NextBlocking();
    ASSERT_TRUE(end.ok()) << end.status();
    EXPECT_FALSE(end->has_value());
  }
}

}  // namespace
}  // namespace auto_shard_test_file
}  // namespace sluice
