// The trainer's checkpoint: model and optimizer state, where the run stands, and the input iterator's
// own state (DistributedIterator::Save), so a resumed run trains on exactly the batches the
// uninterrupted one would have (docs/checkpoint.md).
//
// Contract:
// - WriteTrainerCheckpoint writes atomically (temporary file, fsync, rename): a kill leaves the previous
//   checkpoint or the new one, never a torn file.
// - ReadTrainerCheckpoint: NotFound when there is none; DataLoss when the file is truncated or altered
//   (a checksum over the whole content); FailedPrecondition when it was written by a run whose settings
//   would train differently (another model, batch size, seed, shuffle buffer, epochs or learning rate).
#ifndef SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_CHECKPOINT_H_
#define SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer.h"

namespace fashion_mnist {

struct TrainerCheckpoint {
  std::string settings;  // TrainerSettings(config) of the run that wrote it
  int64_t epoch = 0;     // the epoch in progress, 0-based
  int64_t epoch_steps = 0;
  int64_t epoch_images = 0;
  double epoch_loss_sum = 0.0;  // mean loss times images, over the epoch so far
  int64_t steps_before_epoch = 0;
  double train_seconds = 0.0;  // over the finished epochs
  int64_t images = 0;          // over the finished epochs
  std::vector<EpochResult> finished;
  std::vector<float> parameters;
  std::vector<float> velocity;
  std::string input;  // DistributedIterator::Save
};

// The settings a resumed run must share with the run it resumes (replicas may differ).
std::string TrainerSettings(const TrainerConfig& config);

// Where a run with `checkpoint_dir` keeps its checkpoint.
std::string TrainerCheckpointPath(const std::string& checkpoint_dir);

absl::Status WriteTrainerCheckpoint(const std::string& path, const TrainerCheckpoint& checkpoint);
absl::StatusOr<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path, const TrainerConfig& config);

}  // namespace fashion_mnist

#endif  // SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_CHECKPOINT_H_
