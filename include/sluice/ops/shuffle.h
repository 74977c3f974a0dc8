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
// - Compact checkpoints (Options::compact_checkpoints, docs/checkpoint.md): the state is the pass's seed,
//   the counts of elements pulled and emitted, and the input's mark from before the oldest element still
//   buffered, not the buffer. A restore replays the pass's draws on input indices (no elements) to learn
//   which index each slot held, then re-reads the input from that mark and keeps those elements. The
//   stream marks its input after every kMarkInterval-th pull and saves the newest mark at or before the
//   oldest buffered element, with the index it stands before.
//
//   // Two orders, epoch after epoch, and the same two in every iterator:
//   auto ds = Range(100).Shuffle(/*buffer_size=*/100, /*seed=*/42).Repeat(2);
#ifndef SLUICE_OPS_SHUFFLE_H_
#define SLUICE_OPS_SHUFFLE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ops/detail/mix64.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream_mark.h"

namespace sluice::ops {

// splitmix64: a small, fast, well-mixed generator; reproducible on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  // SplitMix64(g.state()) continues g's sequence (a checkpoint saves it).
  uint64_t state() const { return state_; }
  uint64_t Next() { return detail_mix::Mix64(state_ += detail_mix::kGoldenGamma); }
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
  DatasetSpec element_spec() const override { return input_->element_spec(); }
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
    // The pass index is what a state saves; its number (by epoch) is what seeds the order.
    const uint64_t pass = reshuffle_ ? state.BeginPass(key) : 0;
    const uint64_t pass_number = reshuffle_ ? state.PassNumber(pass) : 0;
    const bool compact = context->options.compact_checkpoints;
    auto stream = std::make_unique<ShuffleStream>(input_->MakeStream(std::move(context)), buffer_size_,
                                                  ShufflePassSeed(seed, pass_number));
    stream->pass_ = pass;
    if (compact) stream->StartMarking();
    return stream;
  }
  bool keeps_compact_state(const Options&) const override { return true; }
  bool rereads_input_by_position() const override { return true; }
  bool begins_passes() const override { return reshuffle_; }
  bool draws_seed() const override { return !seed_; }
  // State: the generator, the buffered elements (errors too), and whether the input ended. The seed and
  // pass counter are the iterator's records, which the checkpoint restores before this runs.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    CompactState compact;
    bool buffered = true;
    if (reader
            .ReadState(path, &compact.rng, &buffered, &compact.input_done, &compact.pass_seed, &compact.pass,
                       &compact.emitted, &compact.pulled, &compact.has_input, &compact.mark_index)
            .ok() &&
        !buffered) {
      return RestoreCompact(std::move(context), reader, path, compact);
    }
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
  // A compact state (see above): the generator, `false` where a full state has its buffer's length (an
  // empty buffer's length is the same byte), input ended, then the rest. A full state decodes as this
  // only with an empty buffer, and then it is too short, so the two never mix.
  struct CompactState {
    uint64_t rng = 0;        // the generator now: the replay must end there
    uint64_t pass_seed = 0;  // the generator at the pass's start
    uint64_t pass = 0;       // the node's pass index in its IteratorState
    int64_t emitted = 0;
    int64_t pulled = 0;
    bool input_done = false;
    bool has_input = false;  // the input's mark follows at /0
    int64_t mark_index = 0;  // ... and stands before this input index
  };

  // The input index each slot holds after the pass's first `emitted` draws, as Poll would have placed
  // them: Poll refills to buffer_size before each draw, and a save may come in the middle of a refill.
  static absl::Status Replay(const CompactState& c, size_t buffer_size, std::vector<int64_t>* slots) {
    if (c.emitted < 0 || c.pulled < c.emitted) {
      return absl::DataLossError(absl::StrCat(c.emitted, " emitted of ", c.pulled, " pulled"));
    }
    SplitMix64 rng(c.pass_seed);
    int64_t next = 0;
    slots->clear();
    for (int64_t e = 0; e < c.emitted; ++e) {
      while (slots->size() < buffer_size && next < c.pulled) slots->push_back(next++);
      if (slots->size() < buffer_size && !c.input_done) {
        return absl::DataLossError(absl::StrCat("draw ", e, " came before the buffer was full"));
      }
      if (slots->empty()) return absl::DataLossError(absl::StrCat("draw ", e, " from an empty buffer"));
      const size_t pick = static_cast<size_t>(rng.Uniform(slots->size()));
      (*slots)[pick] = slots->back();
      slots->pop_back();
    }
    while (next < c.pulled) {
      if (slots->size() >= buffer_size) {
        return absl::DataLossError(absl::StrCat(c.pulled, " pulled overflow a buffer of ", buffer_size));
      }
      slots->push_back(next++);
    }
    if (rng.state() != c.rng) return absl::DataLossError("the generator does not replay to its saved state");
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreCompact(IteratorContextPtr context,
                                                            const CheckpointReader& reader,
                                                            const std::string& path,
                                                            const CompactState& c) const {
    auto stream = std::make_unique<ShuffleStream>(nullptr, buffer_size_, c.rng);
    // A Prefetch above may have begun later passes by the save; the mark is of this one, so the passes
    // after it are numbered from here again.
    if (reshuffle_) context->state->RewindPass(IteratorState::NodeKey{this, this->weak_from_this()}, c.pass);
    stream->pass_ = c.pass;
    if (absl::Status s = Replay(c, static_cast<size_t>(buffer_size_), &stream->indices_); !s.ok()) {
      return reader.Corrupt(path, s);
    }
    const bool compact = context->options.compact_checkpoints;
    const bool needs_input = !stream->indices_.empty() || !c.input_done;
    if (needs_input != c.has_input) {
      return reader.Corrupt(path, absl::DataLossError("an input mark where none belongs, or none"));
    }
    int64_t first_needed = c.pulled;
    for (int64_t index : stream->indices_) first_needed = std::min(first_needed, index);
    if (needs_input && (c.mark_index < 0 || c.mark_index > first_needed)) {
      return reader.Corrupt(path,
                            absl::DataLossError(absl::StrCat("an input mark before index ", c.mark_index,
                                                             ", the buffer needs ", first_needed)));
    }
    if (needs_input) {
      auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
      if (!restored.ok()) return restored.status();
      stream->input_ = std::move(*restored);
    }
    stream->Refill(c, compact);
    return stream;
  }

  class ShuffleStream;
  friend class ShuffleStream;
  class ShuffleStream final : public Stream<T> {
   public:
    ShuffleStream(std::unique_ptr<Stream<T>> input, int64_t buffer_size, uint64_t seed)
        : input_(std::move(input)),
          buffer_size_(static_cast<size_t>(buffer_size)),
          rng_(seed),
          pass_seed_(seed) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (refill_next_ < refill_end_) {
        if (PollState state = PollRefill(out); state != PollState::kReady || refill_failed_) return state;
      }
      while (!input_done_ && buffer_.size() < buffer_size_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          input_done_ = true;
          input_.reset();
          break;
        }
        buffer_.push_back(std::move(in_));
        if (marking_) Pulled(pulled_);
        ++pulled_;
      }
      if (buffer_.empty()) return PollState::kEnd;
      size_t pick = static_cast<size_t>(rng_.Uniform(buffer_.size()));
      *out = std::move(buffer_[pick]);
      // The emptied slot takes the last element; the next Poll refills from the input.
      const size_t last = buffer_.size() - 1;
      if (pick != last) buffer_[pick] = std::move(buffer_.back());
      buffer_.pop_back();
      if (marking_) Emitted(pick, last);
      ++emitted_;
      return PollState::kReady;
    }

    // Compact checkpoints: from now on keep the input's mark every kMarkInterval elements.
    void StartMarking() {
      marking_ = true;
      if (input_ != nullptr) {
        marks_.emplace_back().first = pulled_;
        MarkInput(&marks_.back().second);
      }
    }

    // Called by the node's compact restore: `indices_` holds the slots' input indices; re-read the
    // input from where its restored mark stands (the node checked: not after the oldest of them).
    void Refill(const CompactState& c, bool compact) {
      pulled_ = c.pulled;
      emitted_ = c.emitted;
      pass_seed_ = c.pass_seed;
      saved_input_done_ = c.input_done;
      buffer_.resize(indices_.size());
      oldest_slot_ = 0;
      for (size_t slot = 0; slot < indices_.size(); ++slot) {
        slot_of_.emplace(indices_[slot], slot);
        if (indices_[slot] < indices_[oldest_slot_]) oldest_slot_ = slot;
      }
      refill_next_ = input_ != nullptr ? c.mark_index : c.pulled;
      refill_mark_index_ = refill_next_;
      refill_end_ = c.pulled;
      marking_ = compact;
      if (input_ != nullptr) MarkInput(&refill_mark_);
      if (marking_ && input_ != nullptr) {
        marks_.emplace_back().first = refill_next_;
        marks_.back().second = refill_mark_;
      }
      if (refill_next_ >= refill_end_) FinishRefill();
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<T>::WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if (marking_) {
        int64_t mark_index = 0;
        const StreamMark* input = InputMark(&mark_index);
        writer->WriteState(path, rng_.state(), false, SavedInputDone(), pass_seed_, pass_, emitted_, pulled_,
                           input != nullptr, mark_index);
        if (input != nullptr) input->WriteTo(writer.get(), ChildNodePath(path, 0));
        return Stream<T>::SaveResult(absl::OkStatus());
      }
      if (refill_next_ < refill_end_) {
        return Stream<T>::SaveResult(
            writer->Unsupported(path, "a compact state still re-reading its buffer saves compactly only"));
      }
      if constexpr (!HasElementCodec<T>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, rng_.state(), buffer_, input_done_);
        if (input_done_) return Stream<T>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }
    bool Mark(MarkWriter& mark) const override {
      if (!marking_) return false;
      int64_t mark_index = 0;
      const StreamMark* input = InputMark(&mark_index);
      mark.Write(rng_.state(), false, SavedInputDone(), pass_seed_, pass_, emitted_, pulled_,
                 input != nullptr, mark_index);
      if (input != nullptr) mark.AppendInputMark(0, *input);
      return true;
    }

   private:
    friend class ShuffleNode;

    void MarkInput(StreamMark* out) const { MarkStream(*input_, out); }
    // The element of input index `index` went to the back of the buffer.
    void Pulled(int64_t index) {
      indices_.push_back(index);
      if (indices_.size() == 1) oldest_slot_ = 0;
      MarkEvery(index);
    }
    // Keeps the input's mark after input element `index` when it is due.
    void MarkEvery(int64_t index) {
      if ((index + 1) % kMarkInterval != 0) return;
      marks_.emplace_back().first = index + 1;
      MarkInput(&marks_.back().second);
      ForgetOldMarks();
    }
    // Slot `pick` was emitted and the last slot moved into it.
    void Emitted(size_t pick, size_t last) {
      const bool oldest_left = pick == oldest_slot_;
      if (pick != last) {
        indices_[pick] = indices_[last];
        if (oldest_slot_ == last) oldest_slot_ = pick;
      }
      indices_.pop_back();
      // The oldest leaves with probability 1/size per draw, so this scan costs O(1) per element on average.
      if (oldest_left && !indices_.empty()) {
        oldest_slot_ = 0;
        for (size_t i = 1; i < indices_.size(); ++i) {
          if (indices_[i] < indices_[oldest_slot_]) oldest_slot_ = i;
        }
        ForgetOldMarks();
      }
    }
    // Keeps the newest mark at or before the oldest buffered element (else the next pull) and those after.
    void ForgetOldMarks() {
      const int64_t needed = indices_.empty() ? pulled_ : indices_[oldest_slot_];
      while (marks_.size() >= 2 && marks_[1].first <= needed) marks_.pop_front();
    }
    // Where a restore re-reads from (*index: the input index the mark stands before): the newest mark at
    // or before the oldest buffered element, else before the next pull; null when nothing is left to read.
    const StreamMark* InputMark(int64_t* index) const {
      if (refill_next_ < refill_end_) {
        *index = refill_mark_index_;
        return &refill_mark_;
      }
      if (marks_.empty() || (input_done_ && indices_.empty())) return nullptr;
      *index = marks_.front().first;
      return &marks_.front().second;
    }
    bool SavedInputDone() const { return refill_next_ < refill_end_ ? saved_input_done_ : input_done_; }

    // Re-reads input indices [refill_next_, refill_end_) into their slots; kReady when done.
    PollState PollRefill(absl::StatusOr<T>* out) {
      while (refill_next_ < refill_end_) {
        PollState state = input_->Poll(&in_);
        if (state == PollState::kPending) return state;
        if (state == PollState::kEnd) {
          *out = absl::DataLossError(
              absl::StrCat("Shuffle: restoring a compact checkpoint, the input ended at ", refill_next_,
                           " of the ", refill_end_, " elements it had before the save"));
          refill_failed_ = true;
          refill_next_ = refill_end_;
          buffer_.clear();
          indices_.clear();
          marks_.clear();
          input_done_ = true;
          input_.reset();
          return PollState::kReady;
        }
        auto slot = slot_of_.find(refill_next_);
        if (slot != slot_of_.end()) buffer_[slot->second] = std::move(in_);
        if (marking_) MarkEvery(refill_next_);
        ++refill_next_;
      }
      FinishRefill();
      return PollState::kReady;
    }
    void FinishRefill() {
      slot_of_.clear();
      if (marking_) ForgetOldMarks();
      if (!marking_) indices_.clear();
      if (saved_input_done_) {
        input_done_ = true;
        input_.reset();
      }
    }

    std::unique_ptr<Stream<T>> input_;
    size_t buffer_size_;
    SplitMix64 rng_;
    uint64_t pass_seed_;
    uint64_t pass_ = 0;

   public:  // set by RestoreStream
    std::vector<absl::StatusOr<T>> buffer_;
    bool input_done_ = false;

   private:
    absl::StatusOr<T> in_;
    // Compact checkpoints only (marking_): per slot, the input index of its element; the input's marks
    // (each with the index it stands before, ascending) from the newest at or before the oldest slot's.
    bool marking_ = false;
    int64_t pulled_ = 0;
    int64_t emitted_ = 0;
    std::vector<int64_t> indices_;
    std::deque<std::pair<int64_t, StreamMark>> marks_;
    size_t oldest_slot_ = 0;
    // A compact restore's re-read of the buffer: input indices [refill_next_, refill_end_).
    int64_t refill_next_ = 0;
    int64_t refill_end_ = 0;
    bool refill_failed_ = false;
    bool saved_input_done_ = false;
    StreamMark refill_mark_;
    int64_t refill_mark_index_ = 0;
    std::unordered_map<int64_t, size_t> slot_of_;  // restore only: not on the hot path
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
