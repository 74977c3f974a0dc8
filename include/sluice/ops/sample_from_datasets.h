// SampleFromDatasets and ChooseFromDatasets: elements drawn from several datasets by a selector, as
// tf.data.Dataset.sample_from_datasets / choose_from_datasets (both are tf.data's DirectedInterleave).
//
// ChooseFromDatasets(datasets, choices, stop_on_empty_dataset = true):
// - For each element k of `choices` (a Dataset<int64_t>), in order, yields the next element of
//   datasets[k]. The result ends when `choices` ends.
// - When datasets[k] is exhausted at the moment it is chosen: with stop_on_empty_dataset the whole
//   result ends there (tf.data's default for choose); without it that choice is skipped (the next choice
//   is read) and the result also ends once every input is exhausted.
// - Errors are elements and the stream goes on: an error element of `choices` or of the chosen input is
//   yielded as is; a choice outside [0, datasets.size()) yields InvalidArgument "Selector index out of
//   range: k >= n" (tf.data's message) and consumes nothing else.
// SampleFromDatasets(datasets, weights, seed, stop_on_empty_dataset = false):
// - Each element comes from datasets[i] with probability weights[i] / sum(weights) (weights need not be
//   normalised; empty weights = uniform). Inputs with weight 0 are dropped when the dataset is defined,
//   as tf.data does; if none is left the result is empty, and if one is left the result is that input.
// - stop_on_empty_dataset true: the result ends the first time the chosen input is exhausted. False
//   (tf.data's default for sample): an exhausted input is never chosen again (the remaining weights
//   keep their ratios, the same distribution as tf.data's re-drawing) and the result ends when every
//   input is exhausted.
// - seed: the same seed gives the same sequence of choices, and every iterator of one definition (every
//   epoch of a Repeat) repeats it (tf.data's rerandomize_each_iteration=False). Unseeded, a seed is drawn
//   per iterator at its first use (sluice/ops/iterator_state.h): the iterator's epochs repeat one
//   sequence, another iterator draws another, and params() carry no seed. The generator is sluice's
//   (splitmix64), so sequences are not TensorFlow's.
// - rerandomize_each_iteration (default false, as tf.data): each new pass (each epoch of a Repeat, and
//   each iterator of a DistributedDataset) draws a different sequence, the way Shuffle's
//   reshuffle_each_iteration does; the same seed still gives the same sequence of sequences.
// - Argument errors make the dataset one InvalidArgument element: no datasets, weights.size() !=
//   datasets.size() (when weights are given), or a weight that is negative, NaN or infinite (tf.data
//   would silently drop a negative weight; sluice reports it).
// Cardinality, as tf.data's DirectedInterleave: infinite if any data input is infinite, else unknown.
// Checkpoints (docs/checkpoint.md): both save and restore exactly: the exhausted inputs, a choice an input
// still owes, the generator (Sample; an unseeded one's seed is the iterator's record), the choices
// stream (Choose) and every open input.
// Synchronous: runs inline in the consumer's Poll, waiting only when the selected input (or the
// choices) must; destroying the stream destroys every input stream (async ones join their work).
//
//   auto mixed = SampleFromDatasets<int64_t>({Range(0, 100), Range(1000, 1100)}, {0.9, 0.1}, 42);
//   auto picked = ChooseFromDatasets<int64_t>({Range(0, 3), Range(10, 13)}, FromVector<int64_t>({0, 1, 1, 0}));
#ifndef SLUICE_OPS_SAMPLE_FROM_DATASETS_H_
#define SLUICE_OPS_SAMPLE_FROM_DATASETS_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/shuffle.h"
#include "sluice/ops/take_skip.h"

namespace sluice::ops {

namespace detail_directed {

template <class T>
int64_t DirectedCardinality(const std::vector<NodePtr<T>>& inputs) {
  for (const NodePtr<T>& input : inputs) {
    if (input->cardinality() == kInfiniteCardinality) return kInfiniteCardinality;
  }
  return kUnknownCardinality;
}

// Where the next choice comes from: a dataset of indices.
class DatasetSelector {
 public:
  explicit DatasetSelector(std::unique_ptr<Stream<int64_t>> choices) : choices_(std::move(choices)) {}
  PollState Next(const std::vector<bool>&, absl::StatusOr<int64_t>* choice) { return choices_->Poll(choice); }
  Task<void> WaitReady() { return choices_->WaitReady(); }
  void Reset() { choices_.reset(); }
  // Checkpoints: the choices are input 0 of the node, the data inputs come after them.
  static constexpr size_t kFirstDataInput = 1;
  void AppendState(CheckpointWriter*, std::string_view) const {}
  Stream<int64_t>* choices() const { return choices_.get(); }

 private:
  std::unique_ptr<Stream<int64_t>> choices_;
};

// Where the next choice comes from: a seeded weighted draw among the inputs still active.
class RandomSelector {
 public:
  RandomSelector(std::vector<double> weights, uint64_t seed) : weights_(std::move(weights)), rng_(seed) {}
  PollState Next(const std::vector<bool>& active, absl::StatusOr<int64_t>* choice) {
    double total = 0;
    for (size_t i = 0; i < weights_.size(); ++i) total += active[i] ? weights_[i] : 0.0;
    if (total <= 0) return PollState::kEnd;
    // 53 random bits: uniform in [0, 1).
    double u = static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53 * total;
    size_t last = 0;
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (!active[i] || weights_[i] <= 0) continue;
      last = i;
      if (u < weights_[i]) break;
      u -= weights_[i];
    }
    *choice = static_cast<int64_t>(last);  // rounding can leave u past the end: the last active input
    return PollState::kReady;
  }
  Task<void> WaitReady() { return Ready(); }
  void Reset() {}
  // Checkpoints: the generator, after the common part of the section; no selector stream.
  static constexpr size_t kFirstDataInput = 0;
  void AppendState(CheckpointWriter* writer, std::string_view path) const {
    writer->AppendState(path, rng_.state());
  }
  Stream<int64_t>* choices() const { return nullptr; }
  // A restored selector continues the saved generator.
  void SetRngState(uint64_t state) { rng_ = SplitMix64(state); }

 private:
  static Task<void> Ready() { co_return; }
  std::vector<double> weights_;
  SplitMix64 rng_;
};

// After this many consecutive choices of exhausted inputs, Poll reports kPending (with a WaitReady that
// completes at once) so a consumer stuck on an endless stream of such choices can still be cancelled.
inline constexpr int kMaxSkipsPerPoll = 4096;

template <class T, class Selector>
class DirectedStream final : public Stream<T> {
 public:
  DirectedStream(std::string op, Selector selector, std::vector<std::unique_ptr<Stream<T>>> inputs,
                 bool stop_on_empty)
      : op_(std::move(op)),
        selector_(std::move(selector)),
        inputs_(std::move(inputs)),
        active_(inputs_.size(), true),
        num_active_(static_cast<int64_t>(inputs_.size())),
        stop_on_empty_(stop_on_empty) {}

  PollState Poll(absl::StatusOr<T>* out) override {
    if (ended_) return PollState::kEnd;
    for (int skips = 0; skips < kMaxSkipsPerPoll; ++skips) {
      if (!have_choice_) {
        PollState state = selector_.Next(active_, &choice_);
        if (state == PollState::kPending) {
          waiting_on_ = nullptr;
          return state;
        }
        if (state == PollState::kEnd) return End();
        if (!choice_.ok()) {
          *out = std::move(choice_).status();
          return PollState::kReady;
        }
        if (*choice_ < 0 || *choice_ >= static_cast<int64_t>(inputs_.size())) {
          *out = absl::InvalidArgumentError(
              absl::StrCat(op_, ": Selector index out of range: ", *choice_, " >= ", inputs_.size()));
          return PollState::kReady;
        }
        have_choice_ = true;
      }
      size_t k = static_cast<size_t>(*choice_);
      if (inputs_[k]) {
        PollState state = inputs_[k]->Poll(out);
        if (state == PollState::kPending) {
          waiting_on_ = inputs_[k].get();
          return state;
        }
        if (state == PollState::kReady) {
          have_choice_ = false;
          return state;
        }
        if (stop_on_empty_) return End();
        inputs_[k].reset();
        active_[k] = false;
        if (--num_active_ == 0) return End();
      }
      have_choice_ = false;  // an exhausted input was chosen: draw again
    }
    waiting_on_ = nullptr;
    skipped_out_ = true;
    return PollState::kPending;
  }

  Task<void> WaitReady() override {
    if (skipped_out_) {
      skipped_out_ = false;
      return Stream<T>::WaitReady();
    }
    if (waiting_on_ != nullptr) return waiting_on_->WaitReady();
    return selector_.WaitReady();
  }

  // State: ended, the exhausted inputs, the choice a pending input still owes (a Sample's generator has
  // already moved past it), then the selector's own part; the choices stream at /0 (Choose) and every
  // open input at its child path. Nothing when ended: the inputs are gone.
  Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
    std::vector<int64_t> exhausted;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i]) exhausted.push_back(static_cast<int64_t>(i));
    }
    std::optional<int64_t> pending;
    if (have_choice_ && !ended_) pending = *choice_;
    writer->WriteState(path, ended_, exhausted, pending);
    selector_.AppendState(writer.get(), path);
    return SaveInputs(this, std::move(writer), std::move(path));
  }

  // A restored stream: `inputs` hold nulls for the exhausted ones; `ended` streams hold none.
  void SetRestored(bool ended, std::optional<int64_t> pending) {
    ended_ = ended;
    if (ended) {
      selector_.Reset();
      inputs_.clear();
    }
    num_active_ = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      active_[i] = inputs_[i] != nullptr;
      num_active_ += active_[i] ? 1 : 0;
    }
    if (pending.has_value()) {
      choice_ = *pending;
      have_choice_ = true;
    }
  }

 private:
  static Task<absl::Status> SaveInputs(DirectedStream* self, std::shared_ptr<CheckpointWriter> writer,
                                       std::string path) {
    if (self->ended_) co_return absl::OkStatus();
    if (Stream<int64_t>* choices = self->selector_.choices(); choices != nullptr) {
      absl::Status saved = co_await choices->Save(writer, ChildNodePath(path, 0));
      if (!saved.ok()) co_return saved;
    }
    for (size_t i = 0; i < self->inputs_.size(); ++i) {
      if (!self->inputs_[i]) continue;
      absl::Status saved =
          co_await self->inputs_[i]->Save(writer, ChildNodePath(path, Selector::kFirstDataInput + i));
      if (!saved.ok()) co_return saved;
    }
    co_return absl::OkStatus();
  }

  PollState End() {
    ended_ = true;
    selector_.Reset();
    inputs_.clear();  // free the inputs (files, buffers, async producers) as soon as they cannot be needed
    return PollState::kEnd;
  }

  std::string op_;
  Selector selector_;
  std::vector<std::unique_ptr<Stream<T>>> inputs_;
  std::vector<bool> active_;
  int64_t num_active_;
  bool stop_on_empty_;
  absl::StatusOr<int64_t> choice_;
  bool have_choice_ = false;
  bool ended_ = false;
  bool skipped_out_ = false;
  Stream<T>* waiting_on_ = nullptr;
};

// The common part of a directed stream's section: ended, exhausted inputs, a pending choice, with
// `extra` (the selector's part) read after them, and the data inputs that were open, restored from
// their child paths (null for the exhausted ones).
template <class T, class... Extra>
absl::Status RestoreDirected(const std::vector<NodePtr<T>>& nodes, size_t first_data_input,
                             const IteratorContextPtr& context, const CheckpointReader& reader,
                             const std::string& path, bool* ended, std::optional<int64_t>* pending,
                             std::vector<std::unique_ptr<Stream<T>>>* streams, Extra*... extra) {
  std::vector<int64_t> exhausted;
  if (absl::Status s = reader.ReadState(path, ended, &exhausted, pending, extra...); !s.ok()) return s;
  std::vector<bool> open(nodes.size(), true);
  for (int64_t i : exhausted) {
    if (i < 0 || i >= static_cast<int64_t>(nodes.size()) || !open[static_cast<size_t>(i)]) {
      return reader.Corrupt(path, absl::DataLossError(absl::StrCat("exhausted input ", i)));
    }
    open[static_cast<size_t>(i)] = false;
  }
  if (pending->has_value() && (**pending < 0 || **pending >= static_cast<int64_t>(nodes.size()) ||
                               !open[static_cast<size_t>(**pending)])) {
    return reader.Corrupt(path, absl::DataLossError(absl::StrCat("pending choice ", **pending)));
  }
  if (*ended) return absl::OkStatus();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!open[i]) {
      streams->push_back(nullptr);
      continue;
    }
    auto stream = nodes[i]->RestoreStream(context, reader, ChildNodePath(path, first_data_input + i));
    if (!stream.ok()) return stream.status();
    streams->push_back(std::move(*stream));
  }
  return absl::OkStatus();
}

}  // namespace detail_directed

template <class T>
class ChooseFromDatasetsNode final : public Node<T> {
 public:
  ChooseFromDatasetsNode(std::vector<NodePtr<T>> inputs, NodePtr<int64_t> choices, bool stop_on_empty)
      : inputs_(std::move(inputs)), choices_(std::move(choices)), stop_on_empty_(stop_on_empty) {}
  std::string_view op_name() const override { return "ChooseFromDatasets"; }
  DatasetSpec element_spec() const override { return MergedSpecOf(inputs_); }
  std::vector<Param> params() const override { return {{"stop_on_empty_dataset", stop_on_empty_}}; }
  // The selector first, then the data inputs, as tf.data's DirectedInterleave lists them.
  std::vector<std::shared_ptr<const OpNode>> inputs() const override {
    std::vector<std::shared_ptr<const OpNode>> all{choices_};
    all.insert(all.end(), inputs_.begin(), inputs_.end());
    return all;
  }
  int64_t cardinality() const override { return detail_directed::DirectedCardinality(inputs_); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    std::vector<std::unique_ptr<Stream<T>>> streams;
    for (const NodePtr<T>& input : inputs_) streams.push_back(input->MakeStream(context));
    using Selector = detail_directed::DatasetSelector;
    return std::make_unique<detail_directed::DirectedStream<T, Selector>>(
        "ChooseFromDatasets", Selector(choices_->MakeStream(context)), std::move(streams), stop_on_empty_);
  }
  // State: ended, exhausted inputs, a pending choice; the choices at /0 and the open inputs at /1, ...
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    using Selector = detail_directed::DatasetSelector;
    bool ended = false;
    std::optional<int64_t> pending;
    std::vector<std::unique_ptr<Stream<T>>> streams;
    if (absl::Status s = detail_directed::RestoreDirected(inputs_, Selector::kFirstDataInput, context, reader,
                                                          path, &ended, &pending, &streams);
        !s.ok()) {
      return s;
    }
    std::unique_ptr<Stream<int64_t>> choices;
    if (!ended) {
      auto restored = choices_->RestoreStream(context, reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      choices = std::move(*restored);
    } else {
      streams.resize(inputs_.size());
    }
    auto stream = std::make_unique<detail_directed::DirectedStream<T, Selector>>(
        "ChooseFromDatasets", Selector(std::move(choices)), std::move(streams), stop_on_empty_);
    stream->SetRestored(ended, pending);
    return stream;
  }

 private:
  std::vector<NodePtr<T>> inputs_;
  NodePtr<int64_t> choices_;
  bool stop_on_empty_;
};

template <class T>
class SampleFromDatasetsNode final : public Node<T>, public std::enable_shared_from_this<SampleFromDatasetsNode<T>> {
 public:
  SampleFromDatasetsNode(std::vector<NodePtr<T>> inputs, std::vector<double> weights, std::optional<uint64_t> seed,
                         bool stop_on_empty, bool rerandomize)
      : inputs_(std::move(inputs)),
        weights_(std::move(weights)),
        seed_(seed),
        stop_on_empty_(stop_on_empty),
        rerandomize_(rerandomize) {}
  std::string_view op_name() const override { return "SampleFromDatasets"; }
  DatasetSpec element_spec() const override { return MergedSpecOf(inputs_); }
  std::vector<Param> params() const override {
    std::vector<Param> p{{"weights", weights_}, {"stop_on_empty_dataset", stop_on_empty_}};
    if (seed_) p.push_back({"seed", static_cast<int64_t>(*seed_)});
    // Only when set, so that graphs saved before the option existed keep their bytes and fingerprints.
    if (rerandomize_) p.push_back({"rerandomize_each_iteration", true});
    return p;
  }
  bool draws_seed() const override { return !seed_; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {inputs_.begin(), inputs_.end()}; }
  int64_t cardinality() const override { return detail_directed::DirectedCardinality(inputs_); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    std::vector<std::unique_ptr<Stream<T>>> streams;
    for (const NodePtr<T>& input : inputs_) streams.push_back(input->MakeStream(context));
    const IteratorState::NodeKey key{this, this->weak_from_this()};
    uint64_t seed = seed_ ? *seed_ : context->state->Seed(key);
    if (rerandomize_)
      seed = ShufflePassSeed(seed, context->state->PassNumber(context->state->BeginPass(key)));
    using Selector = detail_directed::RandomSelector;
    return std::make_unique<detail_directed::DirectedStream<T, Selector>>(
        "SampleFromDatasets", Selector(weights_, seed), std::move(streams), stop_on_empty_);
  }
  // State: ended, exhausted inputs, a pending choice, the generator; the open inputs at /0, /1, ... The
  // seed (drawn for an unseeded op) and the pass counter are the iterator's records, restored before
  // this runs, so later passes draw what the saving iterator would have.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    using Selector = detail_directed::RandomSelector;
    bool ended = false;
    std::optional<int64_t> pending;
    uint64_t rng = 0;
    std::vector<std::unique_ptr<Stream<T>>> streams;
    if (absl::Status s = detail_directed::RestoreDirected(inputs_, Selector::kFirstDataInput, context, reader,
                                                          path, &ended, &pending, &streams, &rng);
        !s.ok()) {
      return s;
    }
    if (ended) streams.resize(inputs_.size());
    Selector selector(weights_, 0);
    selector.SetRngState(rng);
    auto stream = std::make_unique<detail_directed::DirectedStream<T, Selector>>(
        "SampleFromDatasets", std::move(selector), std::move(streams), stop_on_empty_);
    stream->SetRestored(ended, pending);
    return stream;
  }

 private:
  std::vector<NodePtr<T>> inputs_;
  std::vector<double> weights_;
  std::optional<uint64_t> seed_;  // nullopt: drawn per iterator
  bool stop_on_empty_;
  bool rerandomize_;
};

// Validates the arguments and applies tf.data's simplifications (zero weights dropped, one input left
// returned as is); see the contract above.
template <class T>
NodePtr<T> MakeSampleFromDatasets(std::vector<NodePtr<T>> inputs, std::vector<double> weights,
                                  std::optional<uint64_t> seed, bool stop_on_empty, bool rerandomize = false) {
  auto error = [](std::string message) {
    return MakeErrorSource<T>("SampleFromDatasets", absl::InvalidArgumentError(std::move(message)));
  };
  if (inputs.empty()) return error("SampleFromDatasets: `datasets` should not be empty");
  if (weights.empty()) weights.assign(inputs.size(), 1.0);
  if (weights.size() != inputs.size()) {
    return error(absl::StrCat("SampleFromDatasets: `weights` should have the same length as `datasets` but got "
                              "len(weights)=",
                              weights.size(), " vs. len(datasets)=", inputs.size()));
  }
  std::vector<NodePtr<T>> kept_inputs;
  std::vector<double> kept_weights;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0) {
      return error(absl::StrCat("SampleFromDatasets: weights[", i, "] = ", weights[i],
                                " must be finite and non-negative"));
    }
    if (weights[i] > 0) {
      kept_inputs.push_back(inputs[i]);
      kept_weights.push_back(weights[i]);
    }
  }
  if (kept_inputs.empty()) return std::make_shared<TakeNode<T>>(inputs[0], 0);
  if (kept_inputs.size() == 1) return kept_inputs[0];
  return std::make_shared<SampleFromDatasetsNode<T>>(std::move(kept_inputs), std::move(kept_weights), seed,
                                                     stop_on_empty, rerandomize);
}

template <class T>
NodePtr<T> MakeChooseFromDatasets(std::vector<NodePtr<T>> inputs, NodePtr<int64_t> choices, bool stop_on_empty) {
  if (inputs.empty()) {
    return MakeErrorSource<T>("ChooseFromDatasets",
                              absl::InvalidArgumentError("ChooseFromDatasets: `datasets` should not be empty"));
  }
  return std::make_shared<ChooseFromDatasetsNode<T>>(std::move(inputs), std::move(choices), stop_on_empty);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_SAMPLE_FROM_DATASETS_H_
