// Shuffle(buffer_size, seed, reshuffle_each_iteration), as tf.data.Dataset.shuffle:
// - Fills a buffer with the first buffer_size elements, then repeatedly emits a uniformly chosen buffered
//   element and puts the next input element in its place; once the input ends the buffer drains in
//   random order. buffer_size 1 is the identity; buffer_size >= the input's size is a full shuffle.
// - Every element comes out exactly once per pass (errors too, as elements).
// - seed: the same seed gives the same orders (sluice's generator, not TensorFlow's Philox, so the
//   orders are not TensorFlow's). Without a seed, one is drawn per iterator, when the iterator first
//   uses the shuffle (sluice/ops/iterator_state.h); the definition holds none, so its params() have no
//   seed and a copy rebuilt in another process stays unseeded.
// - reshuffle_each_iteration (default true): each new pass within one iterator (each epoch of a Repeat)
//   gets the next pass number and so a different order; false gives every pass the same order. Placed
//   before Repeat, an epoch's elements are all emitted before the next epoch's.
// - Iterators: the pass numbers are the iterator's own, starting at 0 (IteratorState), so every iterator
//   of a seeded shuffle gives the same sequence of orders, and iterators running at once never perturb
//   each other. (Changed by issue #12: a definition used to hold one pass counter for all its iterators,
//   as tf.data's seed generator does, so a second iterator got the second order. A DistributedDataset
//   still gives its k-th iterator, its epoch k, pass k; see sluice/distribute/distributed_iterator.h.)
// - buffer_size <= 0 is InvalidArgument. Cardinality: the input's.
//
//   // Two orders, epoch after epoch, and the same two in every iterator:
//   auto ds = Range(100).Shuffle(/*buffer_size=*/100, /*seed=*/42).Repeat(2);
#ifndef SLUICE_OPS_SHUFFLE_H_
#define SLUICE_OPS_SHUFFLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

// splitmix64: a small, fast, well-mixed generator; reproducible on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  // SplitMix64(g.state()) continues g's sequence (a checkpoint saves it).
  uint64_t state() const { return state_; }
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // __extension__: the 128-bit product is a GCC/Clang extension, and -Wpedantic users must not see it.
  __extension__ using Uint128 = unsigned __int128;
  // Uniform in [0, n) without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t Uniform(uint64_t n) {
    for (;;) {
      Uint128 m = static_cast<Uint128>(Next()) * n;
      uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (-n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }

 private:
  uint64_t state_;
};

// The seed of pass `pass` of a shuffle seeded with `seed` (ListFiles rebuilds the same orders).
inline uint64_t ShufflePassSeed(uint64_t seed, uint64_t pass) {
  SplitMix64 mix(seed ^ (pass * 0xd1b54a32d192ed03ULL));
  return mix.Next();
}

template <class T>
class ShuffleNode final : public Node<T>, public std::enable_shared_from_this<ShuffleNode<T>> {
 public:
  ShuffleNode(NodePtr<T> input, int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  std::string_view op_name() const override { return "Shuffle"; }
  std::vector<Param> params() const override {
    std::vector<Param> p{{"buffer_size", buffer_size_}, {"reshuffle_each_iteration", reshuffle_}};
    if (seed_) p.push_back({"seed", static_cast<int64_t>(*seed_)});
    return p;
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    IteratorState& state = *context->state;
    const IteratorState::NodeKey key{this, this->weak_from_this()};
    const uint64_t seed = seed_ ? *seed_ : state.Seed(key);
    const uint64_t pass = reshuffle_ ? state.BeginPass(key) : 0;
    return std::make_unique<ShuffleStream>(input_->MakeStream(std::move(context)), buffer_size_,
                                           ShufflePassSeed(seed, pass));
  }
  // State: the generator, the buffered elements (errors too), and whether the input ended. The seed and
  // pass counter are the iterator's records, which the checkpoint restores before this runs.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      uint64_t rng = 0;
      std::vector<absl::StatusOr<T>> buffer;
      bool input_done = false;
      if (absl::Status s = reader.ReadState(path, &rng, &buffer, &input_done); !s.ok()) return s;
      if (buffer.size() > static_cast<size_t>(buffer_size_)) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat(buffer.size(), " buffered elements")));
      }
      std::unique_ptr<Stream<T>> input;
      if (!input_done) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<ShuffleStream>(std::move(input), buffer_size_, rng);
      stream->buffer_ = std::move(buffer);
      stream->input_done_ = input_done;
      return stream;
    }
  }

 private:
  class ShuffleStream final : public Stream<T> {
   public:
    ShuffleStream(std::unique_ptr<Stream<T>> input, int64_t buffer_size, uint64_t seed)
        : input_(std::move(input)), buffer_size_(static_cast<size_t>(buffer_size)), rng_(seed) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      while (!input_done_ && buffer_.size() < buffer_size_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          input_done_ = true;
          input_.reset();
          break;
        }
        buffer_.push_back(std::move(in_));
      }
      if (buffer_.empty()) return PollState::kEnd;
      size_t pick = static_cast<size_t>(rng_.Uniform(buffer_.size()));
      *out = std::move(buffer_[pick]);
      // The emptied slot takes the last element; the next Poll refills from the input.
      if (pick != buffer_.size() - 1) buffer_[pick] = std::move(buffer_.back());
      buffer_.pop_back();
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<T>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, rng_.state(), buffer_, input_done_);
        if (input_done_) return Stream<T>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    size_t buffer_size_;
    SplitMix64 rng_;

   public:  // set by RestoreStream
    std::vector<absl::StatusOr<T>> buffer_;
    bool input_done_ = false;

   private:
    absl::StatusOr<T> in_;
  };

  NodePtr<T> input_;
  int64_t buffer_size_;
  std::optional<uint64_t> seed_;  // nullopt: drawn per iterator
  bool reshuffle_;
};

template <class T>
NodePtr<T> MakeShuffle(NodePtr<T> input, int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle) {
  if (buffer_size <= 0) {
    return MakeErrorSource<T>("Shuffle", absl::InvalidArgumentError(
                                             absl::StrCat("Shuffle: buffer_size must be > 0, got ", buffer_size)));
  }
  return std::make_shared<ShuffleNode<T>>(std::move(input), buffer_size, seed, reshuffle);
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_SHUFFLE_H_
