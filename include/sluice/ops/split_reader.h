// SplitReader: a source read split by split, the splits handed out at run time by a SplitFeed. The data
// service's workers put it over a pipeline's splittable source in distributed_epoch, so that each split
// (a chunk of a Range or FromVector, one file of a file source) is read by exactly one worker.
//
// Contract:
// - SplitReaderNode<T>(input, feed_id, feed) yields, for each split the feed gives in turn, that split's
//   elements, then ends when the feed says there are no more. A split is either a node of its own (a file
//   source over one file, built by the feed) read whole, or element indices [begin, end) of the reader's
//   input, which must then be a PositionedSource (Range, FromVector) when begin > 0. A feed error is the
//   stream's last element. Errors inside a split are elements, as in the source.
// - In a graph it is the internal op "_ReadSplits" with the param feed (an id in this process's table of
//   feeds, below); a graph naming a feed this process does not have fails to build, naming the id. The
//   op never crosses a process boundary: the dispatcher refuses graphs holding ops whose name starts
//   with '_'.
// - Threading: a stream is pulled by one consumer; the feed's Next() is awaited from it.
#ifndef SLUICE_OPS_SPLIT_READER_H_
#define SLUICE_OPS_SPLIT_READER_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice {

struct Split {
  std::shared_ptr<const OpNode> source;  // nullptr: element indices of the reader's own input
  int64_t begin = 0;
  int64_t end = -1;  // one past the last element; -1: to the end
};

class SplitFeed {
 public:
  virtual ~SplitFeed() = default;
  // The next split, nullopt when there is none left. Observes the awaiting
  // coroutine's stop token.
  virtual Task<absl::StatusOr<std::optional<Split>>> Next() = 0;
};

// The process-wide table the "_ReadSplits" builder looks feeds up in. Adding an
// id twice replaces it.
SLUICE_EXPORT void RegisterSplitFeed(std::string id, std::shared_ptr<SplitFeed> feed);
SLUICE_EXPORT void UnregisterSplitFeed(const std::string& id);
SLUICE_EXPORT std::shared_ptr<SplitFeed> FindSplitFeed(const std::string& id);

namespace ops {

template <class T>
class SplitReaderNode final : public Node<T> {
 public:
  SplitReaderNode(NodePtr<T> input, std::string feed_id, std::shared_ptr<SplitFeed> feed)
      : input_(std::move(input)), feed_id_(std::move(feed_id)), feed_(std::move(feed)) {}
  std::string_view op_name() const override { return "_ReadSplits"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  std::vector<Param> params() const override { return {{"feed", feed_id_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::string not_portable_reason() const override { return "it reads splits from this process's feed"; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<SplitStream>(input_, feed_, std::move(context));
  }

 private:
  class SplitStream final : public Stream<T> {
   public:
    SplitStream(NodePtr<T> input, std::shared_ptr<SplitFeed> feed, IteratorContextPtr context)
        : input_(std::move(input)), feed_(std::move(feed)), context_(std::move(context)) {}

    PollState Poll(absl::StatusOr<T>* out) override {
      for (;;) {
        if (current_ != nullptr) {
          if (remaining_ == 0) {
            current_.reset();
            continue;
          }
          const PollState state = current_->Poll(out);
          if (state == PollState::kReady) {
            if (remaining_ > 0) --remaining_;
            return state;
          }
          if (state == PollState::kPending) return state;
          current_.reset();
          continue;
        }
        if (done_) return PollState::kEnd;
        if (!next_.has_value()) return PollState::kPending;  // WaitReady fetches the next split
        absl::StatusOr<std::optional<Split>> next = std::move(*next_);
        next_.reset();
        if (!next.ok()) {
          done_ = true;
          *out = std::move(next).status();
          return PollState::kReady;
        }
        if (!next->has_value()) {
          done_ = true;
          return PollState::kEnd;
        }
        if (absl::Status started = Start(std::move(**next)); !started.ok()) {
          done_ = true;
          *out = std::move(started);
          return PollState::kReady;
        }
      }
    }

    Task<void> WaitReady() override {
      if (current_ != nullptr) return current_->WaitReady();
      return Fetch();
    }

   private:
    // Awaited by the consumer while the stream lives, so `this` outlives the
    // coroutine.
    Task<void> Fetch() {
      if (next_.has_value() || done_) co_return;
      absl::StatusOr<std::optional<Split>> next = co_await feed_->Next();
      next_ = std::move(next);
    }

    absl::Status Start(Split split) {
      NodePtr<T> node = input_;
      if (split.source != nullptr) {
        node = std::dynamic_pointer_cast<const Node<T>>(split.source);
        if (node == nullptr) {
          return absl::InternalError(absl::StrCat("_ReadSplits: a split's source yields ",
                                                  split.source->element_type_name(), ", not ",
                                                  input_->element_type_name()));
        }
      }
      if (split.begin > 0) {
        auto* positioned = dynamic_cast<const PositionedSource<T>*>(node.get());
        if (positioned == nullptr) {
          return absl::InternalError(absl::StrCat("_ReadSplits: ", std::string(node->op_name()),
                                                  " cannot start a split at element ", split.begin));
        }
        current_ = positioned->MakeStreamAt(context_, SourcePosition{split.begin, 0});
      } else {
        current_ = node->MakeStream(context_);
      }
      remaining_ = split.end < 0 ? -1 : std::max<int64_t>(0, split.end - split.begin);
      return absl::OkStatus();
    }

    NodePtr<T> input_;
    std::shared_ptr<SplitFeed> feed_;
    IteratorContextPtr context_;
    std::unique_ptr<Stream<T>> current_;
    int64_t remaining_ = -1;  // elements left in the current split; -1: all of it
    std::optional<absl::StatusOr<std::optional<Split>>> next_;
    bool done_ = false;
  };

  NodePtr<T> input_;
  std::string feed_id_;
  std::shared_ptr<SplitFeed> feed_;
};

}  // namespace ops
}  // namespace sluice

#endif  // SLUICE_OPS_SPLIT_READER_H_
