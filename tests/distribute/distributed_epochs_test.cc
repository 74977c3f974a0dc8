// A DistributedDataset counts its iterators as epochs: the k-th starts the pipeline's random ops at pass
// k, so a training loop making one iterator per epoch sees a new order each epoch (as before issue #12,
// when the definition held the pass counter), while iterators never perturb each other.
#include "sluice/distribute/distributed_iterator.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/distribute.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace distributed_epochs_test_file {
namespace {

// Every element an iterator yields, its replicas' pieces in order.
std::vector<int64_t> Drain(DistributedIterator<std::vector<int64_t>>& it) {
  std::vector<int64_t> out;
  for (absl::StatusOr<PerReplica<std::vector<int64_t>>> step : it) {
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
    for (const std::vector<int64_t>& piece : step->LocalResults()) out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

TEST(DistributedEpochsTest, TheKthIteratorGetsTheKthEpochsOrder) {
  auto shuffled = Range(24).Shuffle(24, 9);
  // The orders one Dataset iterator gives epoch after epoch.
  std::vector<int64_t> epochs = test_ops::Values(shuffled.Repeat(3));
  ASSERT_EQ(epochs.size(), 72u);
  MirroredStrategy strategy(2);
  DistributedDataset<std::vector<int64_t>> dist = strategy.DistributeDataset(shuffled.BatchVectors(4));
  (void)dist.element_spec();  // runs a throwaway iterator: not an epoch
  for (size_t k = 0; k < 3; ++k) {
    DistributedIterator<std::vector<int64_t>> it = dist.MakeIterator();
    EXPECT_EQ(Drain(it), std::vector<int64_t>(epochs.begin() + 24 * k, epochs.begin() + 24 * (k + 1))) << k;
  }
}

// The trainer's pipeline starts with a seeded, shuffling ListFiles: its epochs keep their orders too.
TEST(DistributedEpochsTest, ListFilesEpochsToo) {
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i) names.push_back(absl::StrCat("/data/train-", i));
  Dataset<std::string> listed(std::make_shared<ops::ListFilesNode>(names, /*shuffle=*/true, /*seed=*/42));
  std::vector<std::string> epochs = test_ops::Values(listed.Repeat(3));
  ASSERT_EQ(epochs.size(), 48u);
  MirroredStrategy strategy(1);
  DistributedDataset<std::vector<std::string>> dist = strategy.DistributeDataset(listed.Batch(16));
  for (size_t k = 0; k < 3; ++k) {
    DistributedIterator<std::vector<std::string>> it = dist.MakeIterator();
    absl::StatusOr<std::optional<PerReplica<std::vector<std::string>>>> step = it.NextBlocking();
    ASSERT_TRUE(step.ok() && step->has_value()) << step.status();
    EXPECT_EQ((*step)->LocalResults()[0],
              std::vector<std::string>(epochs.begin() + 16 * k, epochs.begin() + 16 * (k + 1)))
        << k;
  }
}

TEST(DistributedEpochsTest, IteratorsAliveAtOnceKeepTheirOwnEpochs) {
  auto ds = Range(24).Shuffle(24, 9).BatchVectors(4);
  std::vector<int64_t> epochs = test_ops::Values(Range(24).Shuffle(24, 9).Repeat(2));
  MirroredStrategy strategy(1);
  DistributedDataset<std::vector<int64_t>> dist = strategy.DistributeDataset(ds);
  DistributedDataset<std::vector<int64_t>> copy = dist;  // copies count epochs together
  DistributedIterator<std::vector<int64_t>> first = dist.MakeIterator();
  DistributedIterator<std::vector<int64_t>> second = copy.MakeIterator();
  // Drained in the other order: the epoch is the iterator's from its making, not from its use.
  EXPECT_EQ(Drain(second), std::vector<int64_t>(epochs.begin() + 24, epochs.end()));
  EXPECT_EQ(Drain(first), std::vector<int64_t>(epochs.begin(), epochs.begin() + 24));
}

}  // namespace
}  // namespace distributed_epochs_test_file
}  // namespace sluice
