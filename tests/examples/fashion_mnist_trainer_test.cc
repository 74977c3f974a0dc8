#include "examples/fashion_mnist_trainer/trainer.h"

#include "examples/fashion_mnist_trainer/model.h"

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/distribute.h"
#include "tests/test_util.h"
#include "tools/sluice/convert.h"

namespace fashion_mnist {
namespace {

using sluice::Tensor;

// A slice of the real data, converted once for the whole suite: 3 train shards and 1 test shard.
class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(sluice::testing_util::TempPath("fashion_mnist_trainer"));
    sluice::tools::ConvertOptions options;
    options.out_dir = *dir_;
    options.shards = 3;
    options.test_shards = 1;
    options.limit = kExamples;
    absl::StatusOr<sluice::tools::ConvertSummary> summary = sluice::tools::ConvertFashionMnist(options);
    ASSERT_TRUE(summary.ok()) << summary.status() << " (scripts/install-deps installs dataset-fashion-mnist)";
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  static TrainerConfig SmallConfig() {
    TrainerConfig config;
    config.data_dir = *dir_;
    config.replicas = 2;
    config.epochs = 2;
    config.global_batch_size = 32;
    config.shuffle_buffer = 1000;
    config.parallel_calls = 2;
    return config;
  }

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  static constexpr int64_t kExamples = 3000;
#else
  static constexpr int64_t kExamples = 6000;
#endif
  static std::string* dir_;
};

std::string* TrainerTest::dir_ = nullptr;

TEST_F(TrainerTest, ShortRunBeatsChanceByAWideMargin) {
  TrainerConfig config = SmallConfig();
  std::ostringstream log;
  absl::StatusOr<TrainResult> result = Train(config, log);
  ASSERT_TRUE(result.ok()) << result.status() << "\n" << log.str();
  ASSERT_EQ(result->epochs.size(), 2u);
  // Every training image is seen once per epoch; ceil(n / 32) steps each.
  EXPECT_EQ(result->epochs[0].images, kExamples);
  EXPECT_EQ(result->steps, 2 * ((kExamples + 31) / 32));
  // Chance is 0.1; a few hundred steps of softmax regression get well past 0.6 on this slice.
  EXPECT_GT(result->epochs.back().test_accuracy, 0.6) << log.str();
  EXPECT_LT(result->epochs.back().mean_loss, result->epochs.front().mean_loss + 0.1);
  EXPECT_GE(result->input_wait_share, 0.0);
  EXPECT_LE(result->input_wait_share, 1.0);
  EXPECT_NE(log.str().find("test accuracy"), std::string::npos) << log.str();
}

TEST_F(TrainerTest, SameSeedSameResult) {
  TrainerConfig config = SmallConfig();
  config.epochs = 1;
  config.max_steps_per_epoch = 40;
  config.model = "mlp";
  std::ostringstream log_a, log_b;
  absl::StatusOr<TrainResult> a = Train(config, log_a);
  config.replicas = 3;  // the split changes, the averaged step does not
  absl::StatusOr<TrainResult> b = Train(config, log_b);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->steps, 40);
  EXPECT_EQ(a->epochs[0].images, 40 * 32);
  // Float sums over 2 or 3 replicas associate differently, so compare closely rather than bit for bit.
  EXPECT_NEAR(a->epochs[0].mean_loss, b->epochs[0].mean_loss, 1e-3);
  EXPECT_NEAR(a->epochs[0].test_accuracy, b->epochs[0].test_accuracy, 5e-3);

  config.replicas = 2;
  std::ostringstream log_c;
  absl::StatusOr<TrainResult> c = Train(config, log_c);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(a->epochs[0].mean_loss, c->epochs[0].mean_loss);
  EXPECT_EQ(a->epochs[0].test_accuracy, c->epochs[0].test_accuracy);
}

// Concatenating the replicas' pieces of each step gives back the global batch, in order.
TEST_F(TrainerTest, ReplicaPiecesPartitionEachGlobalBatch) {
  TrainerConfig config = SmallConfig();
  config.global_batch_size = 30;  // not a multiple of 4: uneven pieces
  std::vector<ImageLabelBatch> global;
  sluice::Iterator<ImageLabelBatch> plain = MakeTrainPipeline(config).MakeIterator();
  for (absl::StatusOr<ImageLabelBatch> batch : plain) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    global.push_back(*std::move(batch));
  }
  ASSERT_EQ(static_cast<int64_t>(global.size()), (kExamples + 29) / 30);

  sluice::MirroredStrategy strategy(4);
  sluice::DistributedDataset<ImageLabelBatch> distributed = strategy.DistributeDataset(MakeTrainPipeline(config));
  sluice::DistributedIterator<ImageLabelBatch> it = distributed.MakeIterator();
  size_t step = 0;
  for (;; ++step) {
    absl::StatusOr<std::optional<sluice::PerReplica<ImageLabelBatch>>> next = it.NextBlocking();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    ASSERT_LT(step, global.size());
    const ImageLabelBatch& want = global[step];
    int64_t row = 0;
    for (const ImageLabelBatch& piece : (*next)->LocalResults()) {
      const int64_t rows = piece.second.num_elements();
      ASSERT_EQ(piece.first.num_elements(), rows * kImageSize);
      for (int64_t i = 0; i < rows; ++i, ++row) {
        ASSERT_LT(row, want.second.num_elements());
        EXPECT_EQ(piece.second.span<int64_t>()[i], want.second.span<int64_t>()[row]) << "step " << step;
        Tensor got_image = *piece.first.SubTensor(i);
        Tensor want_image = *want.first.SubTensor(row);
        EXPECT_EQ(got_image, want_image) << "step " << step << " row " << row;
      }
    }
    EXPECT_EQ(row, want.second.num_elements()) << "step " << step;
  }
  EXPECT_EQ(step, global.size());
}

TEST_F(TrainerTest, MissingDataIsNotFound) {
  TrainerConfig config = SmallConfig();
  config.data_dir = *dir_ + "/nowhere";
  std::ostringstream log;
  absl::StatusOr<TrainResult> result = Train(config, log);
  EXPECT_FALSE(result.ok());
}

TEST_F(TrainerTest, BadConfigIsInvalidArgument) {
  TrainerConfig config = SmallConfig();
  config.replicas = 0;
  std::ostringstream log;
  EXPECT_EQ(Train(config, log).status().code(), absl::StatusCode::kInvalidArgument);
  config.replicas = 2;
  config.model = "transformer";
  EXPECT_EQ(Train(config, log).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fashion_mnist
