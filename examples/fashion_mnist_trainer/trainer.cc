#include "trainer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint.h"
#include "model.h"
#include "progress.h"
#include "sluice/distribute.h"
#include "sluice/distribute/service.h"
#include "sluice/engine/run_loop.h"
#include "sluice/engine/task.h"
#include "sluice/io/example.h"

namespace fashion_mnist {
namespace {

using sluice::Dataset;
using sluice::Tensor;

// Interleave reads this many shards at once, 16 records at a time from each, so that a shuffle buffer of a
// few thousand records mixes several shards.
constexpr int64_t kCycleLength = 4;
constexpr int64_t kBlockLength = 16;

sluice::ParseSpec ImageLabelSpec() {
  sluice::ParseSpec spec;
  spec.fixed.push_back({.key = "image",
                        .dtype = sluice::DType::kString,
                        .shape = sluice::Shape(),
                        .default_value = std::nullopt});
  spec.fixed.push_back({.key = "label",
                        .dtype = sluice::DType::kInt64,
                        .shape = sluice::Shape(),
                        .default_value = std::nullopt});
  return spec;
}

// `path` as a glob(3) pattern that matches only itself.
std::string GlobLiteral(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The shards the manifest lists, through ListFiles: it sorts them and shuffles with the seed as it did
// when it globbed SPLIT-*.tfrecord*, so a folder of one conversion trains exactly as before.
Dataset<ImageLabel> DecodedExamples(const TrainerConfig& config, const std::vector<std::string>& shards,
                                    bool shuffle_files) {
  std::vector<std::string> patterns;
  for (const std::string& shard : shards) patterns.push_back(GlobLiteral(shard));
  Dataset<std::string> files = sluice::ListFiles(std::move(patterns), shuffle_files, config.seed);
  EnsureTrainerRegistrations();
  return files.Interleave(kOpenShard, kCycleLength, kBlockLength, config.parallel_calls, config.deterministic)
      .ParseExample(ImageLabelSpec())
      .Map(kDecodeImage, config.parallel_calls, config.deterministic);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the replicas and the step barrier share during one epoch.
struct EpochState {
  EpochState(Model* model, SgdMomentum* optimizer, EpochProgress* progress, WaitTracker* waits, int replicas,
             int64_t max_steps)
      : model(model),
        optimizer(optimizer),
        progress(progress),
        waits(waits),
        max_steps(max_steps),
        gradients(static_cast<size_t>(replicas),
                  std::vector<float>(static_cast<size_t>(model->num_parameters()))),
        batch_sizes(static_cast<size_t>(replicas), 0),
        losses(static_cast<size_t>(replicas), 0.0f),
        averaged(static_cast<size_t>(model->num_parameters())) {}

  Model* model;
  SgdMomentum* optimizer;
  EpochProgress* progress;
  WaitTracker* waits;
  int64_t max_steps;
  // Runs after the optimizer step when a checkpoint is due (every `checkpoint_every` steps in all), with
  // every replica waiting at the barrier, so none is inside its iterator's Next.
  std::function<absl::Status()> checkpoint;
  int64_t checkpoint_every = 0;
  int64_t steps_before_epoch = 0;
  int64_t stop_after_steps = -1;
  std::vector<std::vector<float>> gradients;  // gradients[r]: replica r's mean gradient of this step
  std::vector<int64_t> batch_sizes;
  std::vector<float> losses;
  std::vector<float> averaged;
  int64_t steps = 0;
  // Set by the barrier's completion (step limit, optimizer error) or by a failing replica: every replica
  // leaves after the current step.
  std::atomic<bool> stop{false};
  std::stop_source cancel;  // wakes replicas blocked on their iterators when one of them failed
  // Set where building a Status could itself run out of memory (the barrier's completion); Train()
  // reports it after the replicas are joined.
  std::atomic<bool> out_of_memory{false};
  std::mutex error_mutex;
  absl::Status error;

  void Fail(absl::Status status) {
    {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (error.ok()) error = std::move(status);
    }
    stop.store(true, std::memory_order_release);
    cancel.request_stop();
  }
};

// Runs once per step on the last replica to arrive, while the others wait: the all-reduce (average weighted
// by batch size) and the optimizer step on the shared weights.
struct ApplyStep {
  EpochState* state;
  // noexcept (std::barrier requires it): running out of memory here stops the run (and allocates nothing).
  void operator()() noexcept {
    try {
      Apply();
    } catch (const std::bad_alloc&) {
      state->out_of_memory.store(true, std::memory_order_relaxed);
      state->stop.store(true, std::memory_order_release);
      state->cancel.request_stop();
    }
  }
  void Apply() {
    std::vector<std::span<const float>> grads(state->gradients.begin(), state->gradients.end());
    int64_t images = 0;
    double loss_sum = 0.0;
    for (size_t r = 0; r < state->batch_sizes.size(); ++r) {
      images += state->batch_sizes[r];
      loss_sum += static_cast<double>(state->losses[r]) * static_cast<double>(state->batch_sizes[r]);
    }
    // The phase that completes when the last replica leaves carries no data.
    if (images == 0) return;
    absl::Status status = AverageGradients(grads, state->batch_sizes, state->averaged);
    if (status.ok()) status = state->optimizer->Apply(state->model->parameters(), state->averaged);
    if (!status.ok()) {
      state->Fail(std::move(status));
      return;
    }
    ++state->steps;
    if (images > 0) state->progress->Update(images, loss_sum / static_cast<double>(images));
    if (state->max_steps >= 0 && state->steps >= state->max_steps)
      state->stop.store(true, std::memory_order_release);
    const int64_t total_steps = state->steps_before_epoch + state->steps;
    if (state->checkpoint && state->checkpoint_every > 0 && total_steps % state->checkpoint_every == 0) {
      if (absl::Status saved = state->checkpoint(); !saved.ok()) {
        state->Fail(std::move(saved));
        return;
      }
    }
    if (total_steps == state->stop_after_steps) {
      state->Fail(
          absl::AbortedError(absl::StrCat("stopped after ", total_steps, " steps (stop_after_steps)")));
    }
  }
};

using StepBarrier = std::barrier<ApplyStep>;

// One replica: pull my piece of each global step, compute its gradient, meet the others at the barrier.
// The queue wakes this coroutine on a pool worker; it hops back to its own thread (`home`) before the
// gradient and the blocking barrier, which must never occupy the workers that produce the input.
sluice::Task<absl::Status> ReplicaLoop(sluice::ReplicaIterator<ImageLabelBatch>* input, int replica,
                                       EpochState* state, StepBarrier* barrier, sluice::RunLoop* home) {
  const size_t r = static_cast<size_t>(replica);
  absl::Status status;
  while (!state->stop.load(std::memory_order_acquire)) {
    const int64_t step_start = NowNanos();
    absl::StatusOr<std::optional<ImageLabelBatch>> next = co_await input->Next();
    co_await home->Schedule();
    const int64_t waited = NowNanos() - step_start;
    if (!next.ok()) {
      status = std::move(next).status();
      break;
    }
    if (!next->has_value()) break;  // every replica reaches the end at the same step
    const Tensor& images = (*next)->first;
    const Tensor& labels = (*next)->second;
    state->batch_sizes[r] = labels.num_elements();
    absl::StatusOr<float> loss = 0.0f;
    bool out_of_memory = false;
    try {
      loss =
          state->model->ComputeGradients(images.span<float>(), labels.span<int64_t>(), state->gradients[r]);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;  // the Status is built once the handler has let go of the exception
    }
    if (out_of_memory) {
      loss = absl::ResourceExhaustedError(
          absl::StrCat("out of memory computing the gradients of a batch of ", labels.num_elements()));
    }
    if (!loss.ok()) {
      status = loss.status();
      break;
    }
    state->losses[r] = *loss;
    barrier->arrive_and_wait();
    state->waits->Record(replica, waited, NowNanos() - step_start);
  }
  // Leaving lowers the barrier's count, so the others never wait for a replica that is gone. Leaving
  // also arrives, so this replica contributes nothing to the phase it completes.
  state->batch_sizes[r] = 0;
  barrier->arrive_and_drop();
  co_return status;
}

struct TestSet {
  std::vector<float> images;
  std::vector<int64_t> labels;
};

absl::StatusOr<TestSet> LoadTestSet(const TrainerConfig& config, const ShardSet& shards) {
  TestSet test;
  sluice::Iterator<ImageLabelBatch> it = MakeTestPipeline(config, shards).MakeIterator();
  for (absl::StatusOr<ImageLabelBatch> batch : it) {
    if (!batch.ok()) return batch.status();
    std::span<const float> images = batch->first.span<float>();
    std::span<const int64_t> labels = batch->second.span<int64_t>();
    // The whole test set is held in memory: say so when it does not fit, rather than abort.
    try {
      test.images.insert(test.images.end(), images.begin(), images.end());
      test.labels.insert(test.labels.end(), labels.begin(), labels.end());
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory loading the test set from ", config.data_dir, " after ", test.labels.size(),
          " images (", test.images.size() * sizeof(float), " bytes of pixels)"));
    }
  }
  if (test.labels.empty()) {
    return absl::NotFoundError(absl::StrCat("no test records under ", config.data_dir,
                                            " (run `sluice convert fashion-mnist --out ", config.data_dir,
                                            "`)"));
  }
  return test;
}

}  // namespace

// A job name of this trainer's own, shared by its epochs (epoch k reads the job's iteration k).
std::string ServiceJobName() {
  static std::atomic<int64_t> runs{0};
  return absl::StrCat("fashion_mnist_train_", ::getpid(), "_", runs.fetch_add(1));
}

Dataset<ImageLabelBatch> MakeTrainPipeline(const TrainerConfig& config, const ShardSet& shards) {
  if (!config.dispatcher.empty()) {
    // Workers may run in another directory: give them absolute paths.
    std::vector<std::string> absolute;
    for (const std::string& shard : shards.train)
      absolute.push_back(std::filesystem::absolute(shard).string());
    sluice::service::ServiceOptions options;
    options.processing_mode = sluice::service::ProcessingMode::kDistributedEpoch;
    options.dispatcher_address = config.dispatcher;
    options.job_name = ServiceJobName();
    return DecodedExamples(config, absolute, /*shuffle_files=*/true)
        .Distribute(options)
        .Shuffle(config.shuffle_buffer, config.seed, /*reshuffle_each_iteration=*/true)
        .Batch(config.global_batch_size);
  }
  return DecodedExamples(config, shards.train, /*shuffle_files=*/true)
      .Shuffle(config.shuffle_buffer, config.seed, /*reshuffle_each_iteration=*/true)
      .Batch(config.global_batch_size);
}

Dataset<ImageLabelBatch> MakeTestPipeline(const TrainerConfig& config, const ShardSet& shards) {
  return DecodedExamples(config, shards.test, /*shuffle_files=*/false).Batch(kDefaultBatchSize);
}

absl::StatusOr<TrainResult> Train(const TrainerConfig& config, std::ostream& out) {
  if (config.replicas <= 0 || config.epochs <= 0 || config.global_batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("replicas (", config.replicas, "), epochs (",
                                                   config.epochs, ") and global batch size (",
                                                   config.global_batch_size, ") must be positive"));
  }
  absl::StatusOr<std::unique_ptr<Model>> made = MakeModel(config.model, config.seed);
  if (!made.ok()) return made.status();
  std::unique_ptr<Model> model = std::move(*made);
  // The files of one conversion, from its manifest: never a mix of two, never a leftover .tmp file.
  absl::StatusOr<ShardSet> shards = FindShards(config.data_dir);
  if (!shards.ok()) return shards.status();
  for (const std::string& ignored : shards->ignored) {
    out << "note: ignoring " << ignored << " (left by an interrupted conversion)\n";
  }
  const int64_t train_records = shards->train_records;
  if (train_records == 0) {
    return absl::NotFoundError(absl::StrCat("no training records under ", config.data_dir,
                                            " (run `sluice convert fashion-mnist --out ", config.data_dir,
                                            "`)"));
  }
  absl::StatusOr<TestSet> test = LoadTestSet(config, *shards);
  if (!test.ok()) return test.status();

  const float base_rate = config.learning_rate > 0 ? config.learning_rate : DefaultLearningRate(*model);
  SgdMomentum optimizer{
      .learning_rate = base_rate, .momentum = kDefaultMomentum, .weight_decay = DefaultWeightDecay(*model)};
  const bool checkpointing = !config.checkpoint_dir.empty();
  const std::string checkpoint_path = checkpointing ? TrainerCheckpointPath(config.checkpoint_dir) : "";
  std::optional<TrainerCheckpoint> resumed;
  if (config.resume) {
    if (!checkpointing) return absl::InvalidArgumentError("resume needs a checkpoint directory");
    absl::StatusOr<TrainerCheckpoint> read = ReadTrainerCheckpoint(checkpoint_path, config);
    if (!read.ok()) return read.status();
    if (read->parameters.size() != model->parameters().size() ||
        (!read->velocity.empty() && read->velocity.size() != read->parameters.size())) {
      return absl::FailedPreconditionError(
          absl::StrCat("the checkpoint at ", checkpoint_path, " holds ", read->parameters.size(),
                       " parameters, the model has ", model->parameters().size()));
    }
    std::copy(read->parameters.begin(), read->parameters.end(), model->parameters().begin());
    optimizer.velocity = read->velocity;
    resumed = std::move(*read);
  }
  sluice::MirroredStrategy strategy(config.replicas);
  sluice::DistributeOptions distribute_options;
  distribute_options.iterator_options.deterministic = config.deterministic;
  // Checkpoints hold the input's position (source offsets, the shuffle's window and draws), not the
  // shuffle buffer's decoded images: a few KiB instead of 33 MB. A pipeline that cannot keep a compact
  // state (--nondeterministic) saves the full one.
  distribute_options.iterator_options.compact_checkpoints = checkpointing;
  sluice::DistributedDataset<ImageLabelBatch> distributed =
      strategy.DistributeDataset(MakeTrainPipeline(config, *shards), distribute_options);

  out << "training " << model->name() << " on " << train_records << " images (" << config.data_dir << "), "
      << config.replicas << " replicas, global batch " << config.global_batch_size << ", " << config.epochs
      << " epochs\n";
  TrainResult result;
  WaitTracker waits(config.replicas);
  SteadyProgressClock clock;
  double train_seconds = 0.0;
  int64_t images = 0;
  int first_epoch = 0;
  if (resumed) {
    first_epoch = static_cast<int>(resumed->epoch);
    result.epochs = resumed->finished;
    result.steps = resumed->steps_before_epoch;
    train_seconds = resumed->train_seconds;
    images = resumed->images;
    out << "resuming from " << checkpoint_path << ": epoch " << first_epoch + 1 << ", step "
        << resumed->epoch_steps << " of it\n";
  }
  for (int epoch = first_epoch; epoch < config.epochs; ++epoch) {
    optimizer.learning_rate = CosineLearningRate(base_rate, epoch, config.epochs);
    int64_t epoch_images = train_records;
    if (config.max_steps_per_epoch >= 0) {
      epoch_images = std::min(epoch_images, config.max_steps_per_epoch * config.global_batch_size);
    }
    EpochProgress progress(out, clock,
                           {.epoch = epoch + 1,
                            .num_epochs = config.epochs,
                            .total_images = epoch_images,
                            .interactive = config.interactive});
    EpochState state(model.get(), &optimizer, &progress, &waits, config.replicas, config.max_steps_per_epoch);
    state.steps_before_epoch = result.steps;
    state.stop_after_steps = config.stop_after_steps;
    const bool resuming = resumed && epoch == first_epoch;
    if (resuming) {
      state.steps = resumed->epoch_steps;
      progress.Resume(resumed->epoch_images, resumed->epoch_loss_sum);
      // Saved at the epoch's last step: the uninterrupted run stopped there.
      if (config.max_steps_per_epoch >= 0 && state.steps >= config.max_steps_per_epoch) state.stop = true;
    }
    StepBarrier barrier(config.replicas, ApplyStep{&state});
    {
      // Destroyed after the replica threads are joined: it cancels what the fan-out still has in flight.
      absl::StatusOr<sluice::DistributedIterator<ImageLabelBatch>> made =
          resuming ? distributed.RestoreIterator(resumed->input) : distributed.MakeIterator();
      if (!made.ok()) return made.status();
      sluice::DistributedIterator<ImageLabelBatch>& input = *made;
      if (checkpointing) {
        state.checkpoint_every = config.checkpoint_every;
        state.checkpoint = [&, epoch]() -> absl::Status {
          absl::StatusOr<std::string> saved = input.SaveBlocking();
          if (!saved.ok()) return saved.status();
          TrainerCheckpoint c;
          c.settings = TrainerSettings(config);
          c.epoch = epoch;
          c.epoch_steps = state.steps;
          c.epoch_images = progress.images();
          c.epoch_loss_sum = progress.loss_sum();
          c.steps_before_epoch = state.steps_before_epoch;
          c.train_seconds = train_seconds;
          c.images = images;
          c.finished = result.epochs;
          c.parameters.assign(model->parameters().begin(), model->parameters().end());
          c.velocity = optimizer.velocity;
          c.input = std::move(*saved);
          return WriteTrainerCheckpoint(checkpoint_path, c);
        };
      }
      std::vector<std::thread> threads;
      threads.reserve(static_cast<size_t>(config.replicas));
      for (int r = 0; r < config.replicas; ++r) {
        threads.emplace_back([&input, &state, &barrier, r] {
          sluice::RunLoop home;
          std::optional<sluice::Task<absl::Status>> loop;
          absl::Status status;
          try {
            loop.emplace(ReplicaLoop(&input.Replica(r), r, &state, &barrier, &home));
          } catch (const std::bad_alloc&) {  // the coroutine frame; inside it, errors are Statuses
            status = absl::ResourceExhaustedError("out of memory starting the replica");
            barrier
                .arrive_and_drop();  // as ReplicaLoop does when it leaves, so the others do not wait for it
          }
          if (loop.has_value()) status = home.Run(std::move(*loop), state.cancel.get_token());
          if (!status.ok())
            state.Fail(absl::Status(status.code(), absl::StrCat("replica ", r, ": ", status.message())));
        });
      }
      for (std::thread& t : threads) t.join();
      state.checkpoint = nullptr;  // it refers to `input`
    }
    if (!state.error.ok()) return state.error;
    if (state.out_of_memory.load(std::memory_order_relaxed)) {
      return absl::ResourceExhaustedError("out of memory while averaging the replicas' gradients");
    }
    train_seconds += progress.elapsed_seconds();
    images += progress.images();
    result.steps += state.steps;
    absl::StatusOr<EvalResult> eval = Evaluate(*model, test->images, test->labels);
    if (!eval.ok()) return eval.status();
    progress.Finish(eval->accuracy, eval->loss);
    result.epochs.push_back({.epoch = epoch + 1,
                             .images = progress.images(),
                             .mean_loss = progress.mean_loss(),
                             .test_accuracy = eval->accuracy,
                             .test_loss = eval->loss,
                             .images_per_second = progress.images_per_second()});
  }
  result.input_wait_share = waits.Share();
  out << FormatRunSummary({.epochs = config.epochs,
                           .num_replicas = config.replicas,
                           .images = images,
                           .train_seconds = train_seconds,
                           .test_accuracy = result.epochs.back().test_accuracy,
                           .test_loss = result.epochs.back().test_loss,
                           .input_wait_share = result.input_wait_share});
  return result;
}

int TrainAndReport(const TrainerConfig& config, std::ostream& out, std::ostream& err) {
  absl::Status status;
  try {
    status = Train(config, out).status();
  } catch (const std::bad_alloc&) {
    status = absl::ResourceExhaustedError("out of memory (std::bad_alloc)");
  }
  if (status.ok()) return 0;
  err << "fashion_mnist_trainer: " << status << "\n";
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    err << "(not enough memory: free some, raise the process's limits, or use fewer replicas or a smaller "
           "--shuffle-buffer)\n";
  }
  return 1;
}

}  // namespace fashion_mnist
