// The Fashion-MNIST trainer: a sluice input pipeline feeding R replicas through MirroredStrategy, each
// replica a coroutine on its own thread that co_awaits its own replica iterator.
//
// Contract:
// - Input: the train and test shards that OUT/manifest.txt lists, as written by `sluice convert
//   fashion-mnist` (tf.train.Example with image = 784 raw bytes, label = int64); see shards.h for the
//   folders refused (mixed shard sets, files that disagree with the manifest) and the .tmp files ignored.
//   The epoch size is the manifest's train record count.
// - Training pipeline (MakeTrainPipeline): ListFiles(the train shards, shuffled with the seed) ->
// Interleave(TFRecord,
//   parallel) -> ParseExample -> Map(decode to float32 [784], standardised, parallel) -> Shuffle(seeded,
//   reshuffled each epoch) -> Batch(global batch). One pass is one epoch; the last batch may be short.
// - Step: every replica gets its piece of the same global batch (tf.distribute's split), computes the
//   gradient of the mean loss on it, and waits at a barrier; the barrier's completion averages the
//   replicas' gradients weighted by their batch sizes (an all-reduce by averaging), applies one optimizer
//   step to the shared weights and reports progress. So R replicas train exactly as one big-batch step.
// - Determinism: with deterministic pipeline options (the default) the same seed gives the same weights,
//   losses and accuracies run after run, whatever the number of threads.
// - Errors: a missing data directory, a bad record or a model error ends the run with that Status; so does
//   running out of memory (RESOURCE_EXHAUSTED: from the readers, naming file, offset and size, or from
//   the trainer, e.g. while holding the test set).
// - Threading: Train() blocks; it starts one thread per replica and joins them before returning.
//
//   TrainerConfig config;
//   config.data_dir = "build/data/fashion-mnist";
//   absl::StatusOr<TrainResult> result = Train(config, std::cout);
#ifndef SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_TRAINER_H_
#define SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_TRAINER_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "shards.h"
#include "sluice/dataset.h"
#include "sluice/io/tensor.h"

namespace fashion_mnist {

// A decoded example: 784 standardised float pixels and the label. Batching stacks both components, so a
// batch is (float32 [B, 784], int64 [B]).
using ImageLabel = std::pair<sluice::Tensor, int64_t>;
using ImageLabelBatch = std::pair<sluice::Tensor, sluice::Tensor>;

// The pipeline's own functions, registered (registrations.cc) so that the pipeline is data another
// process can rebuild (sluice/ops/graph.h): a shard's path -> its records; a parsed Example -> pixels
// and label.
inline constexpr sluice::Function<sluice::Dataset<std::string>(std::string)> kOpenShard{
    "fashion_mnist.open_shard"};
inline constexpr sluice::Function<absl::StatusOr<ImageLabel>(sluice::ParsedExample)> kDecodeImage{
    "fashion_mnist.decode_image"};
// Registers them and ImageLabel's op builders, once; the pipeline builders call it.
void EnsureTrainerRegistrations();

struct TrainerConfig {
  std::string data_dir;
  std::string model = "softmax";  // "softmax" or "mlp"
  int replicas = 2;
  int epochs = 5;
  int64_t global_batch_size = 256;
  float learning_rate = 0.0f;  // 0: the model's measured default
  uint64_t seed = 42;
  int64_t shuffle_buffer = 10000;
  int64_t parallel_calls = -1;  // Map and Interleave parallelism; -1 = autotune
  bool deterministic = true;
  int64_t max_steps_per_epoch = -1;  // -1: whole epochs; tests train on a few steps
  bool interactive = false;          // progress bar redrawn in place (a terminal) or log lines
  // "host:port" of a data-service dispatcher: reading, parsing and decoding the training shards run on
  // its workers (distributed_epoch, one shard per split; workers must link the trainer's registrations,
  // e.g. `fashion_mnist_trainer worker`); shuffle and batch stay here. Empty: everything runs here.
  std::string dispatcher;
  // Checkpoints (docs/checkpoint.md): every `checkpoint_every` steps the model, the optimizer and the input
  // iterator's position are saved under checkpoint_dir; with `resume` the run continues from there and
  // trains on exactly the batches the uninterrupted run would have (same seed and settings; the number
  // of replicas may differ). Empty: no checkpoints.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 100;
  bool resume = false;
  // Tests: end the run after this many steps in all, as a kill would (Aborted, nothing saved); -1: never.
  int64_t stop_after_steps = -1;
};

struct EpochResult {
  int epoch = 0;
  int64_t images = 0;
  double mean_loss = 0.0;
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  double images_per_second = 0.0;
};

struct TrainResult {
  std::vector<EpochResult> epochs;
  int64_t steps = 0;
  double input_wait_share = 0.0;  // share of the replicas' step time spent waiting for input
};

// The training input of one epoch from `shards` (FindShards(config.data_dir)), batched with the global
// batch size. With config.dispatcher the part before Shuffle runs on data-service workers: each element
// still comes once per epoch, in an order that depends on the workers' timing.
sluice::Dataset<ImageLabelBatch> MakeTrainPipeline(const TrainerConfig& config, const ShardSet& shards);

// The test split, in file order, batched for evaluation.
sluice::Dataset<ImageLabelBatch> MakeTestPipeline(const TrainerConfig& config, const ShardSet& shards);

// Trains as described above, writing the progress and the final summary to `out`.
absl::StatusOr<TrainResult> Train(const TrainerConfig& config, std::ostream& out);

// Train() for the command line: the exit status (0 trained, 1 failed) with the failure written to `err`
// as "fashion_mnist_trainer: STATUS". Running out of memory anywhere on the calling thread (a
// std::bad_alloc, which would otherwise abort the process) is reported the same way.
int TrainAndReport(const TrainerConfig& config, std::ostream& out, std::ostream& err);

}  // namespace fashion_mnist

#endif  // SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_TRAINER_H_
