// Zip(a, b, ...): tf.data.Dataset.zip over two or more datasets.
//
// Contract (tf.data's ZipDataset):
// - Elements: (a_i, b_i, ...) as std::pair for two inputs, std::tuple for more, until the first input
//   that ends; every later step is the end too.
// - Each step takes one element from the inputs in order. An error element from input k is that step's
//   element: the elements already taken from inputs before k are dropped and inputs after k are not
//   advanced (as tf's GetNext returns at the first failing input). Errors do not end the stream.
// - Cardinality: the smallest known one; infinite only if all are; unknown if any is unknown.
// - Threading: synchronous; polls its inputs inline and keeps the elements it already has across a
//   kPending from a later input.
#ifndef SLUICE_OPS_ZIP_H_
#define SLUICE_OPS_ZIP_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

// Out is std::pair<Ts...> or std::tuple<Ts...>.
template <class Out, class... Ts>
class ZipNode final : public Node<Out> {
  static_assert(sizeof...(Ts) >= 2, "Zip needs at least two inputs");

 public:
  explicit ZipNode(NodePtr<Ts>... inputs) : inputs_(std::move(inputs)...) {}
  std::string_view op_name() const override { return "Zip"; }
  DatasetSpec element_spec() const override {
    return std::apply([](const auto&... in) { return element_spec_detail::Join({in->element_spec()...}); },
                      inputs_);
  }
  // Marks are taken between steps (after an element or before the first), so they hold no elements; the
  // codecs are for the section's layout.
  bool keeps_compact_state(const Options&) const override { return (HasElementCodec<Ts> && ...); }
  std::vector<Param> params() const override { return {}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override {
    return std::apply([](const auto&... in) { return std::vector<std::shared_ptr<const OpNode>>{in...}; },
                      inputs_);
  }
  int64_t cardinality() const override {
    const std::vector<int64_t> counts =
        std::apply([](const auto&... in) { return std::vector<int64_t>{in->cardinality()...}; }, inputs_);
    int64_t result = kInfiniteCardinality;
    for (int64_t n : counts) {
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality) result = result == kInfiniteCardinality ? n : std::min(result, n);
    }
    return result;
  }
  std::unique_ptr<Stream<Out>> MakeStream(IteratorContextPtr context) const override {
    return std::apply(
        [&context](const auto&... in) { return std::make_unique<ZipStream>(in->MakeStream(context)...); },
        inputs_);
  }
  // State: which input this step polls next, the elements this step already took (a step can stop
  // half way when an input is pending, e.g. under a Prefetch's paused producer), whether it ended, and
  // each input's state at its child path.
  absl::StatusOr<std::unique_ptr<Stream<Out>>> RestoreStream(IteratorContextPtr context,
                                                             const CheckpointReader& reader,
                                                             const std::string& path) const override {
    if constexpr (!(HasElementCodec<Ts> && ...)) {
      return reader.Unsupported(path);
    } else {
      uint64_t next = 0;
      bool ended = false;
      std::tuple<std::optional<Ts>...> taken;
      if (absl::Status s = reader.ReadState(path, &next, &ended, &taken); !s.ok()) return s;
      bool consistent = next < kInputs;
      [&]<size_t... I>(std::index_sequence<I...>) {
        ((consistent = consistent && std::get<I>(taken).has_value() == (I < next)), ...);
      }
      (std::index_sequence_for<Ts...>{});
      if (!consistent) {
        return reader.Corrupt(
            path, absl::DataLossError(absl::StrCat("input ", next, " with other elements taken")));
      }
      absl::Status failed;
      auto restore = [&]<class U>(const NodePtr<U>& node, size_t i) -> std::unique_ptr<Stream<U>> {
        if (!failed.ok()) return nullptr;
        auto stream = node->RestoreStream(context, reader, ChildNodePath(path, i));
        if (!stream.ok()) {
          failed = stream.status();
          return nullptr;
        }
        return std::move(*stream);
      };
      auto streams = [&]<size_t... I>(std::index_sequence<I...>) {
        return std::tuple<std::unique_ptr<Stream<Ts>>...>{restore(std::get<I>(inputs_), I)...};
      }
      (std::index_sequence_for<Ts...>{});
      if (!failed.ok()) return failed;
      auto stream =
          std::apply([](auto&... s) { return std::make_unique<ZipStream>(std::move(s)...); }, streams);
      stream->next_ = static_cast<size_t>(next);
      stream->ended_ = ended;
      stream->taken_ = std::move(taken);
      return stream;
    }
  }

 private:
  static constexpr size_t kInputs = sizeof...(Ts);

  class ZipStream final : public Stream<Out> {
   public:
    explicit ZipStream(std::unique_ptr<Stream<Ts>>... streams) : streams_(std::move(streams)...) {}

    PollState Poll(absl::StatusOr<Out>* out) override {
      if (ended_) return PollState::kEnd;
      return PollFrom<0>(out);
    }
    Task<void> WaitReady() override { return WaitAt<0>(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!(HasElementCodec<Ts> && ...)) {
        return Stream<Out>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, static_cast<uint64_t>(next_), ended_, LiveTaken());
        return SaveInputs(this, std::move(writer), std::move(path));
      }
    }
    bool Mark(MarkWriter& mark) const override {
      if constexpr (!(HasElementCodec<Ts> && ...)) {
        return false;
      } else {
        mark.Write(static_cast<uint64_t>(next_), ended_, LiveTaken());
        return std::apply([&mark](const auto&... s) { return MarkInputs(mark, s...); }, streams_);
      }
    }

    std::tuple<std::optional<Ts>...> taken_;
    size_t next_ = 0;  // the input this step polls next
    bool ended_ = false;

   private:
    // Only the elements of this step's inputs before next_ are live; the rest were moved out.
    std::tuple<std::optional<Ts>...> LiveTaken() const {
      std::tuple<std::optional<Ts>...> taken;
      [&]<size_t... I>(std::index_sequence<I...>) {
        ((I < next_ ? (void)(std::get<I>(taken) = std::get<I>(taken_)) : (void)0), ...);
      }
      (std::index_sequence_for<Ts...>{});
      return taken;
    }
    template <class... Streams>
    static bool MarkInputs(MarkWriter& mark, const Streams&... streams) {
      size_t index = 0;
      return (mark.Input(index++, *streams) && ...);
    }

    // Polls input I if this step has not taken its element yet, then the inputs after it.
    template <size_t I>
    PollState PollFrom(absl::StatusOr<Out>* out) {
      if constexpr (I == kInputs) {
        next_ = 0;
        *out = std::apply([](auto&... taken) { return Out(std::move(*taken)...); }, taken_);
        return PollState::kReady;
      } else {
        if (next_ == I) {
          PollState state = std::get<I>(streams_)->Poll(&std::get<I>(polled_));
          if (state == PollState::kPending) return state;
          if (state == PollState::kEnd) {
            ended_ = true;
            return state;
          }
          if (!std::get<I>(polled_).ok()) {
            next_ = 0;
            *out = std::move(std::get<I>(polled_)).status();
            return PollState::kReady;
          }
          std::get<I>(taken_).emplace(std::move(*std::get<I>(polled_)));
          ++next_;
        }
        return PollFrom<I + 1>(out);
      }
    }

    template <size_t I>
    Task<void> WaitAt() {
      if constexpr (I + 1 == kInputs) {
        return std::get<I>(streams_)->WaitReady();
      } else {
        return next_ == I ? std::get<I>(streams_)->WaitReady() : WaitAt<I + 1>();
      }
    }

    static Task<absl::Status> SaveInputs(ZipStream* self, std::shared_ptr<CheckpointWriter> writer,
                                         std::string path) {
      absl::Status status;
      co_await SaveFrom<0>(self, writer, path, &status);
      co_return status;
    }
    template <size_t I>
    static Task<void> SaveFrom(ZipStream* self, std::shared_ptr<CheckpointWriter> writer, std::string path,
                               absl::Status* status) {
      if constexpr (I < kInputs) {
        *status = co_await std::get<I>(self->streams_)->Save(writer, ChildNodePath(path, I));
        if (status->ok()) co_await SaveFrom<I + 1>(self, writer, path, status);
      }
    }

    std::tuple<std::unique_ptr<Stream<Ts>>...> streams_;
    std::tuple<absl::StatusOr<Ts>...> polled_;
  };

  std::tuple<NodePtr<Ts>...> inputs_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ZIP_H_
