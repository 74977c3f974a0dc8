#include "examples/fashion_mnist_trainer/shards.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/fashion_mnist_trainer/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"
#include "tools/sluice/convert.h"

namespace fashion_mnist {
namespace fashion_mnist_shards_test_file {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int64_t kExamples = 300;  // per split: small, so that each test converts its own folder

// `sluice convert fashion-mnist` of the first kExamples images into `dir`.
void Convert(const std::string& dir, int shards, int test_shards) {
  sluice::tools::ConvertOptions options;
  options.out_dir = dir;
  options.shards = shards;
  options.test_shards = test_shards;
  options.limit = kExamples;
  absl::StatusOr<sluice::tools::ConvertSummary> summary = sluice::tools::ConvertFashionMnist(options);
  ASSERT_TRUE(summary.ok()) << summary.status() << " (scripts/install-deps installs dataset-fashion-mnist)";
}

TrainerConfig OneEpoch(const std::string& dir) {
  TrainerConfig config;
  config.data_dir = dir;
  config.epochs = 1;
  config.global_batch_size = 32;
  config.shuffle_buffer = 100;
  config.parallel_calls = 2;
  return config;
}

TEST(ShardsTest, OneConversionGivesItsShardsInNameOrder) {
  const std::string dir = sluice::testing_util::TempPath("shards_one");
  Convert(dir, 3, 2);
  absl::StatusOr<ShardSet> shards = FindShards(dir);
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ(shards->train, (std::vector<std::string>{dir + "/train-00000-of-00003.tfrecord",
                                                     dir + "/train-00001-of-00003.tfrecord",
                                                     dir + "/train-00002-of-00003.tfrecord"}));
  EXPECT_EQ(shards->test, (std::vector<std::string>{dir + "/test-00000-of-00002.tfrecord",
                                                    dir + "/test-00001-of-00002.tfrecord"}));
  EXPECT_EQ(shards->train_records, kExamples);
  EXPECT_EQ(shards->test_records, kExamples);
  EXPECT_TRUE(shards->ignored.empty());
}

// Issue 13, item 4: converting twice into one folder with different shard counts doubled the epoch.
TEST(ShardsTest, TwoConversionsInOneFolderAreRefused) {
  const std::string dir = sluice::testing_util::TempPath("shards_mixed");
  Convert(dir, 3, 1);
  Convert(dir, 2, 1);  // writes train-0000k-of-00002 and a manifest of its own; the -of-00003 files stay
  absl::StatusOr<ShardSet> shards = FindShards(dir);
  ASSERT_FALSE(shards.ok());
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shards.status().message(), HasSubstr(absl::StrCat(dir, " mixes shard sets: train-00000-of-00003")));
  EXPECT_THAT(shards.status().message(), HasSubstr("would see images twice"));

  std::ostringstream log;
  absl::StatusOr<TrainResult> trained = Train(OneEpoch(dir), log);
  EXPECT_EQ(trained.status(), shards.status());  // refused before any step

  // Once the stale files are gone, the folder is one conversion again.
  for (int k = 0; k < 3; ++k) fs::remove(dir + "/train-0000" + std::to_string(k) + "-of-00003.tfrecord");
  EXPECT_TRUE(FindShards(dir).ok());
}

// Issue 13, item 4: a .tmp file left by an interrupted conversion matched the glob and failed the run.
TEST(ShardsTest, LeftoverTmpFilesAreIgnored) {
  const std::string dir = sluice::testing_util::TempPath("shards_tmp");
  Convert(dir, 3, 1);
  const std::string tmp = dir + "/train-00001-of-00004.tfrecord.tmp";
  sluice::testing_util::WriteFile(tmp, "half a shard");
  absl::StatusOr<ShardSet> shards = FindShards(dir);
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ(shards->ignored, std::vector<std::string>{tmp});
  EXPECT_EQ(shards->train.size(), 3u);

  std::ostringstream log;
  absl::StatusOr<TrainResult> trained = Train(OneEpoch(dir), log);
  ASSERT_TRUE(trained.ok()) << trained.status() << "\n" << log.str();
  EXPECT_EQ(trained->epochs[0].images, kExamples);  // every image once
  EXPECT_THAT(log.str(), HasSubstr(absl::StrCat("note: ignoring ", tmp, " (left by an interrupted conversion)")));
}

TEST(ShardsTest, FoldersThatDisagreeWithTheManifestAreRefused) {
  const std::string dir = sluice::testing_util::TempPath("shards_disagree");
  Convert(dir, 2, 1);
  const std::string shard = dir + "/train-00001-of-00002.tfrecord";
  const uintmax_t size = fs::file_size(shard);

  // A shard of another size than the manifest records.
  {
    std::ofstream(shard, std::ios::binary | std::ios::app) << "x";
  }
  absl::StatusOr<ShardSet> shards = FindShards(dir);
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shards.status().message(),
              HasSubstr(absl::StrCat(shard, " has ", size + 1, " bytes but manifest.txt records ", size)));

  // A listed shard that is gone.
  fs::remove(shard);
  shards = FindShards(dir);
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shards.status().message(), HasSubstr(absl::StrCat(shard, " is listed in manifest.txt but is not")));

  // Shards but no manifest: an interrupted conversion, or files from elsewhere.
  Convert(dir, 2, 1);
  fs::remove(dir + "/manifest.txt");
  shards = FindShards(dir);
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shards.status().message(), HasSubstr("but no manifest.txt"));

  // A manifest of another format.
  sluice::testing_util::WriteFile(dir + "/manifest.txt", "format 2\n");
  shards = FindShards(dir);
  EXPECT_EQ(shards.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shards.status().message(), HasSubstr("this trainer reads format 1"));
}

TEST(ShardsTest, MissingOrEmptyFolderIsNotFound) {
  EXPECT_EQ(FindShards(sluice::testing_util::TempPath("shards_nowhere")).status().code(),
            absl::StatusCode::kNotFound);
  const std::string empty = sluice::testing_util::TempPath("shards_empty");
  fs::create_directories(empty);
  EXPECT_EQ(FindShards(empty).status().code(), absl::StatusCode::kNotFound);
}

// The listed files reach ListFiles as patterns that match only themselves.
TEST(ShardsTest, GlobCharactersInTheFolderNameAreLiteral) {
  const std::string dir = sluice::testing_util::TempPath("shards_[glob]*?");
  Convert(dir, 2, 1);
  std::ostringstream log;
  absl::StatusOr<TrainResult> trained = Train(OneEpoch(dir), log);
  ASSERT_TRUE(trained.ok()) << trained.status() << "\n" << log.str();
  EXPECT_EQ(trained->epochs[0].images, kExamples);
}

}  // namespace
}  // namespace fashion_mnist_shards_test_file
}  // namespace fashion_mnist
