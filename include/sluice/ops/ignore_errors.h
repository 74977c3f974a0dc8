// IgnoreErrors(log_warning, counter): the input's elements with its error elements dropped, as
// tf.data.Dataset.ignore_errors.
//
// Contract:
// - Elements: every OK element of the input, in order; each error element is skipped and counted.
//   CancelledError elements are not dropped (tf.data does not ignore cancellation either): they pass
//   through so a cancelled pipeline still reports it.
// - log_warning (default false, as tf.data): each dropped error is logged at warning level through
//   sluice/engine/log.h ("IgnoreErrors: dropped error: <status>"), as tf.data logs a warning. Without
//   it nothing is logged; the counter below still sees every drop.
// - Counting: pass an ErrorCounter to read how many errors were dropped. One counter may be shared by
//   every iterator of the dataset (and by several datasets): it sums them all. It is thread-safe and
//   may be read at any time from any thread while iterators run.
// - Cardinality: the input's, as tf.data reports for ignore_errors (an upper bound once errors occur).
// - A synchronous op: runs inline in the consumer's Poll; kPending only when the input is.
//
//   auto errors = std::make_shared<ErrorCounter>();
//   auto ds = TFRecord(files).Map(Parse).IgnoreErrors(/*log_warning=*/false, errors);
//   for (auto x : ds.MakeIterator()) { ... }   // only parsed records
//   int64_t skipped = errors->count();
#ifndef SLUICE_OPS_IGNORE_ERRORS_H_
#define SLUICE_OPS_IGNORE_ERRORS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/engine/log.h"
#include "sluice/ops/op_node.h"

namespace sluice {

// How many error elements IgnoreErrors dropped. Thread-safe.
class ErrorCounter {
 public:
  int64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  void Add(int64_t n = 1) noexcept { count_.fetch_add(n, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> count_{0};
};

namespace ops {

template <class T>
class IgnoreErrorsNode final : public Node<T> {
 public:
  IgnoreErrorsNode(NodePtr<T> input, bool log_warning, std::shared_ptr<ErrorCounter> counter)
      : input_(std::move(input)), log_warning_(log_warning), counter_(std::move(counter)) {}
  std::string_view op_name() const override { return "IgnoreErrors"; }
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  std::vector<Param> params() const override { return {{"log_warning", log_warning_}}; }
  std::string not_portable_reason() const override {
    return counter_ ? "it counts into an ErrorCounter, an object of this process" : "";
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<IgnoreErrorsStream>(input_->MakeStream(std::move(context)), log_warning_, counter_);
  }
  // No state of its own (the counter is the caller's object, never saved).
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if (absl::Status s = reader.ReadState(path); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    return std::make_unique<IgnoreErrorsStream>(std::move(*input), log_warning_, counter_);
  }

 private:
  class IgnoreErrorsStream final : public Stream<T> {
   public:
    IgnoreErrorsStream(std::unique_ptr<Stream<T>> input, bool log_warning, std::shared_ptr<ErrorCounter> counter)
        : input_(std::move(input)), log_warning_(log_warning), counter_(std::move(counter)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      for (;;) {
        PollState state = input_->Poll(out);
        if (state != PollState::kReady || out->ok() || absl::IsCancelled(out->status())) return state;
        if (log_warning_ && LogEnabled(LogLevel::kWarning)) {
          Log(LogLevel::kWarning, absl::StrCat("IgnoreErrors: dropped error: ", out->status().ToString()));
        }
        if (counter_) counter_->Add();
      }
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    bool log_warning_;
    std::shared_ptr<ErrorCounter> counter_;
  };

  NodePtr<T> input_;
  bool log_warning_;
  std::shared_ptr<ErrorCounter> counter_;
};

}  // namespace ops
}  // namespace sluice

#endif  // SLUICE_OPS_IGNORE_ERRORS_H_
