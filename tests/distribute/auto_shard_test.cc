// Auto-shard by FILE names its target by node path: the decision is data that survives a rebuild of the
// graph, and each iterator resolves it against its own root.
#include "sluice/distribute/auto_shard.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute/distributed_iterator.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/node_path.h"
#include "tests/test_util.h"

namespace sluice {
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

  std::vector<std::string> files_;
};

TEST_F(AutoShardPathTest, TheDecisionNamesTheFileSourceByPath) {
  auto ds = Pipeline();
  EXPECT_EQ(distribute::FindFileSourcePath(*ds.node()), std::optional<std::string>("/0/0/1"));
  EXPECT_EQ(distribute::FindFileSource(*ds.node()), ds.node()->inputs()[0]->inputs()[0]->inputs()[1].get());
  EXPECT_EQ(distribute::FindFileSourcePath(*Range(3).Batch(2).node()), std::nullopt);
  // The first in depth-first order, inputs in order.
  auto two = Zip(TextLines({files_[0]}), TextLines(files_));
  EXPECT_EQ(distribute::FindFileSourcePath(*two.node()), std::optional<std::string>("/0"));

  absl::StatusOr<distribute::ShardDecision> decision =
      distribute::DecideShardPolicy(*ds.node(), AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->applied, AutoShardPolicy::kFile);
  EXPECT_EQ(decision->file_source_path, "/0/0/1");
  EXPECT_EQ(decision->num_files, 4);
  decision = distribute::DecideShardPolicy(*ds.node(), AutoShardPolicy::kAuto, 1);
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->file_source_path, "");
  decision = distribute::DecideShardPolicy(*Range(8).Batch(2).node(), AutoShardPolicy::kAuto, 2);
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->applied, AutoShardPolicy::kData);
  EXPECT_EQ(decision->file_source_path, "");
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
      distribute::DecideShardPolicy(*Pipeline().node(), AutoShardPolicy::kFile, 2);
  ASSERT_TRUE(decision.ok()) << decision.status();
  auto rebuilt = Pipeline();
  auto context = std::make_shared<IteratorContext>();
  absl::StatusOr<const OpNode*> target = distribute::ResolveFileSource(*rebuilt.node(), decision->file_source_path);
  ASSERT_TRUE(target.ok()) << target.status();
  context->file_shard = {decision->file_source_path, *target, 2, 1};
  Iterator<std::vector<std::string>> it(rebuilt.node()->MakeStream(context), context);
  std::vector<std::vector<std::string>> batches;
  for (absl::StatusOr<std::vector<std::string>> batch : it) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    batches.push_back(*batch);
  }
  // Files 1 and 3 only.
  EXPECT_THAT(batches, ElementsAre(ElementsAre("f1-0", "f1-1"), ElementsAre("f3-0", "f3-1")));
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
  config.file_source_path = "/0/0/1";
  config.num_files = 4;
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
    wrong.file_source_path = path;
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
}  // namespace sluice
