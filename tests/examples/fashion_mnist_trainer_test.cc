#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "examples/fashion_mnist_trainer/checkpoint.h"
#include "examples/fashion_mnist_trainer/model.h"
#include "examples/fashion_mnist_trainer/trainer.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "sluice/distribute.h"
#include "sluice/distribute/service.h"
#include "sluice/ops/graph.h"
#include "tests/test_util.h"
#include "tools/sluice/convert.h"

namespace fashion_mnist {
namespace fashion_mnist_trainer_test_file {
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

#if defined(SLUICE_SANITIZED_BUILD)
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

// A run killed between checkpoints and resumed ends with the weights, losses and accuracies of the
// uninterrupted run: the input restarts exactly after the last checkpointed step.
TEST_F(TrainerTest, KilledRunResumesExactly) {
  TrainerConfig config = SmallConfig();
  config.max_steps_per_epoch = 15;
  std::ostringstream log_a;
  absl::StatusOr<TrainResult> uninterrupted = Train(config, log_a);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();

  config.checkpoint_dir = sluice::testing_util::TempPath("trainer_checkpoint");
  config.checkpoint_every = 4;
  config.stop_after_steps = 22;  // epoch 2, step 7; the last checkpoint is at step 20
  std::ostringstream log_b;
  absl::StatusOr<TrainResult> killed = Train(config, log_b);
  ASSERT_EQ(killed.status().code(), absl::StatusCode::kAborted) << killed.status();

  config.stop_after_steps = -1;
  config.resume = true;
  std::ostringstream log_c;
  absl::StatusOr<TrainResult> resumed = Train(config, log_c);
  ASSERT_TRUE(resumed.ok()) << resumed.status() << "\n" << log_c.str();
  EXPECT_NE(log_c.str().find("resuming from"), std::string::npos) << log_c.str();
  EXPECT_EQ(resumed->steps, uninterrupted->steps);
  ASSERT_EQ(resumed->epochs.size(), uninterrupted->epochs.size());
  for (size_t e = 0; e < resumed->epochs.size(); ++e) {
    EXPECT_EQ(resumed->epochs[e].images, uninterrupted->epochs[e].images) << e;
    EXPECT_EQ(resumed->epochs[e].mean_loss, uninterrupted->epochs[e].mean_loss) << e;
    EXPECT_EQ(resumed->epochs[e].test_accuracy, uninterrupted->epochs[e].test_accuracy) << e;
    EXPECT_EQ(resumed->epochs[e].test_loss, uninterrupted->epochs[e].test_loss) << e;
  }

  // On 3 replicas the global batches are the same; the float sums associate differently.
  config.replicas = 3;
  std::ostringstream log_d;
  absl::StatusOr<TrainResult> three = Train(config, log_d);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->steps, uninterrupted->steps);
  EXPECT_NEAR(three->epochs.back().mean_loss, uninterrupted->epochs.back().mean_loss, 1e-3);

  // Other settings, or a damaged file, are refused rather than trained on.
  config.seed += 1;
  std::ostringstream log_e;
  EXPECT_EQ(Train(config, log_e).status().code(), absl::StatusCode::kFailedPrecondition);
  config.seed -= 1;
  const std::string path = TrainerCheckpointPath(config.checkpoint_dir);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] ^= 0x10;
  sluice::testing_util::WriteFile(path, bytes);
  std::ostringstream log_f;
  absl::Status damaged = Train(config, log_f).status();
  EXPECT_EQ(damaged.code(), absl::StatusCode::kDataLoss) << damaged;
  std::filesystem::remove_all(config.checkpoint_dir);
}

// --dispatcher: reading, parsing and decoding on two data-service workers; every image still comes once
// per epoch (distributed_epoch), so the step count and the accuracy band are the local run's.
TEST_F(TrainerTest, TrainsOverADataService) {
  EnsureTrainerRegistrations();  // the in-process workers rebuild the trainer's functions
  absl::StatusOr<std::unique_ptr<sluice::service::DispatcherServer>> dispatcher =
      sluice::service::DispatcherServer::Start({});
  ASSERT_TRUE(dispatcher.ok()) << dispatcher.status();
  std::vector<std::unique_ptr<sluice::service::WorkerServer>> workers;
  for (int i = 0; i < 2; ++i) {
    sluice::service::WorkerConfig worker_config;
    worker_config.dispatcher_address = (*dispatcher)->address();
    worker_config.threads = 1;
    absl::StatusOr<std::unique_ptr<sluice::service::WorkerServer>> worker =
        sluice::service::WorkerServer::Start(worker_config);
    ASSERT_TRUE(worker.ok()) << worker.status();
    workers.push_back(*std::move(worker));
  }
  TrainerConfig config = SmallConfig();
  config.dispatcher = (*dispatcher)->address();
  std::ostringstream log;
  absl::StatusOr<TrainResult> result = Train(config, log);
  for (auto& worker : workers) worker->Stop();
  (*dispatcher)->Stop();
  ASSERT_TRUE(result.ok()) << result.status() << "\n" << log.str();
  ASSERT_EQ(result->epochs.size(), 2u);
  EXPECT_EQ(result->epochs[0].images, kExamples);
  EXPECT_EQ(result->epochs[1].images, kExamples);
  EXPECT_EQ(result->steps, 2 * ((kExamples + 31) / 32));
  EXPECT_GT(result->epochs.back().test_accuracy, 0.6) << log.str();
}

// Concatenating the replicas' pieces of each step gives back the global batch, in order.
TEST_F(TrainerTest, ReplicaPiecesPartitionEachGlobalBatch) {
  TrainerConfig config = SmallConfig();
  config.global_batch_size = 30;  // not a multiple of 4: uneven pieces
  std::vector<ImageLabelBatch> global;
  absl::StatusOr<ShardSet> shards = FindShards(config.data_dir);
  ASSERT_TRUE(shards.ok()) << shards.status();
  sluice::Iterator<ImageLabelBatch> plain = MakeTrainPipeline(config, *shards).MakeIterator();
  for (absl::StatusOr<ImageLabelBatch> batch : plain) {
    ASSERT_TRUE(batch.ok()) << batch.status();
    global.push_back(*std::move(batch));
  }
  ASSERT_EQ(static_cast<int64_t>(global.size()), (kExamples + 29) / 30);

  sluice::MirroredStrategy strategy(4);
  sluice::DistributedDataset<ImageLabelBatch> distributed =
      strategy.DistributeDataset(MakeTrainPipeline(config, *shards));
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

// The trainer's pipelines are data: they serialize (registered functions, no lambdas) and the rebuilt
// definitions yield exactly the same batches.
TEST_F(TrainerTest, PipelinesSerializeAndRebuildToTheSameBatches) {
  TrainerConfig config = SmallConfig();
  absl::StatusOr<ShardSet> shards = FindShards(config.data_dir);
  ASSERT_TRUE(shards.ok()) << shards.status();
  for (const sluice::Dataset<ImageLabelBatch>& pipeline :
       {MakeTrainPipeline(config, *shards), MakeTestPipeline(config, *shards)}) {
    absl::StatusOr<std::string> bytes = sluice::Serialize(pipeline);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<sluice::Dataset<ImageLabelBatch>> rebuilt = sluice::BuildTyped<ImageLabelBatch>(*bytes);
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
    EXPECT_EQ(rebuilt->DebugString(), pipeline.DebugString());
    sluice::Iterator<ImageLabelBatch> want = pipeline.MakeIterator();
    sluice::Iterator<ImageLabelBatch> got = rebuilt->MakeIterator();
    int64_t batches = 0;
    for (;; ++batches) {
      absl::StatusOr<std::optional<ImageLabelBatch>> a = want.NextBlocking();
      absl::StatusOr<std::optional<ImageLabelBatch>> b = got.NextBlocking();
      ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " / " << b.status();
      ASSERT_EQ(a->has_value(), b->has_value()) << "batch " << batches;
      if (!a->has_value()) break;
      EXPECT_EQ((*a)->first, (*b)->first) << "batch " << batches;
      EXPECT_EQ((*a)->second, (*b)->second) << "batch " << batches;
    }
    EXPECT_GT(batches, 0);
  }
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

// Runs in a child: TrainAndReport with only ~160 MiB more data memory allowed; exits with its status.
void TrainUnderDataLimit(const TrainerConfig& config, const std::vector<std::string>& cleanup) {
  const rlimit limit{sluice::testing_util::VmDataBytes() + (uint64_t{160} << 20), RLIM_INFINITY};
  if (::setrlimit(RLIMIT_DATA, &limit) != 0) std::_Exit(3);
  std::ostringstream out, err;
  const int code = TrainAndReport(config, out, err);
  std::fprintf(stderr, "%s", err.str().c_str());
  std::fflush(stderr);
  // _Exit skips the exit-time cleanup of TempPath folders: remove this process's own.
  std::error_code ignored;
  for (const std::string& dir : cleanup) std::filesystem::remove_all(dir, ignored);
  std::_Exit(code);
}

// Issue 13: running out of memory is a message and exit status 1, not an abort. A test shard holds one
// record of 250 MiB (a hole in a sparse file) and the run has far less memory than that: the reader's
// RESOURCE_EXHAUSTED, naming the shard, the offset and the size, ends the run.
TEST_F(TrainerTest, OutOfMemoryIsReportedNotAborted) {
#if defined(SLUICE_SANITIZED_BUILD)
  GTEST_SKIP() << "sanitizer runtimes need address space of their own: no RLIMIT_DATA for them";
#endif
  const std::string dir = sluice::testing_util::TempPath("fashion_mnist_oom");
  std::filesystem::create_directories(dir);
  std::string manifest;
  // The manifest of the converted slice, its test shard replaced by the one below.
  const std::string original = sluice::testing_util::ReadWholeFile(*dir_ + "/manifest.txt");
  for (absl::string_view line : absl::StrSplit(original, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "file test ")) absl::StrAppend(&manifest, line, "\n");
  }
  for (const auto& entry : std::filesystem::directory_iterator(*dir_)) {
    if (entry.path().filename().string().rfind("train-", 0) == 0) {
      std::filesystem::copy_file(entry.path(), dir / entry.path().filename());
    }
  }
  constexpr uint64_t kRecord = uint64_t{250} << 20;  // under max_record_bytes (256 MiB)
  std::byte header[sluice::io::kTFRecordHeaderBytes];
  sluice::io::EncodeTFRecordHeader(kRecord, header);
  const std::string shard = dir + "/test-00000-of-00001.tfrecord";
  sluice::testing_util::WriteFile(shard, std::string(reinterpret_cast<const char*>(header), sizeof(header)));
  const uint64_t shard_bytes = sizeof(header) + kRecord + 4;
  ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(shard_bytes)), 0);
  absl::StrAppend(&manifest, "file test test-00000-of-00001.tfrecord 1 ", shard_bytes, "\n");
  sluice::testing_util::WriteFile(dir + "/manifest.txt", manifest);
  TrainerConfig config = SmallConfig();
  config.data_dir = dir;
  config.epochs = 1;
  config.max_steps_per_epoch = 1;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(TrainUnderDataLimit(config, {dir, *dir_}), ::testing::ExitedWithCode(1),
              "fashion_mnist_trainer: RESOURCE_EXHAUSTED: .*test-00000-of-00001.tfrecord: record at offset 0 "
              "needs 262144000 bytes: out of memory");
}

}  // namespace
}  // namespace fashion_mnist_trainer_test_file
}  // namespace fashion_mnist
