// ErrorSource: the dataset an op builder returns for invalid arguments (tf.data raises at construction;
// a C++ builder that chains cannot, so the error is the one element the dataset yields, then it ends).
// It shows as Error(op="Shuffle", code="INVALID_ARGUMENT", message="...") and crosses the wire as such.
#ifndef SLUICE_OPS_ERROR_SOURCE_H_
#define SLUICE_OPS_ERROR_SOURCE_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

template <class T>
class ErrorSourceNode final : public Node<T>, public PositionedSource<T> {
 public:
  ErrorSourceNode(std::string op, absl::Status status) : op_(std::move(op)), status_(std::move(status)) {}
  std::string_view op_name() const override { return "Error"; }
  // `op` is the builder that refused its arguments; code and message rebuild the status (not its payloads).
  std::vector<Param> params() const override {
    return {{"op", op_}, {"code", absl::StatusCodeToString(status_.code())}, {"message", std::string(status_.message())}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return 1; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr) const override {
    return std::make_unique<ErrorStream>(status_);
  }
  // Position {0, 0} before the error, {1, 0} after it.
  std::unique_ptr<Stream<T>> MakeStreamAt(IteratorContextPtr, SourcePosition position) const override {
    auto stream = std::make_unique<ErrorStream>(status_);
    stream->done_ = position.index != 0;
    return stream;
  }

 private:
  class ErrorStream final : public Stream<T> {
   public:
    explicit ErrorStream(absl::Status status) : status_(std::move(status)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (done_) return PollState::kEnd;
      done_ = true;
      *out = status_;
      return PollState::kReady;
    }
    std::optional<SourcePosition> position() const override { return SourcePosition{done_ ? 1 : 0, 0}; }

    bool done_ = false;

   private:
    absl::Status status_;
  };

  std::string op_;
  absl::Status status_;
};

// The code TensorFlow and Abseil name "INVALID_ARGUMENT" etc.; InvalidArgument for another name.
inline absl::StatusOr<absl::StatusCode> StatusCodeFromName(const std::string& name) {
  for (int code = 1; code <= 16; ++code) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(code)) == name) return static_cast<absl::StatusCode>(code);
  }
  return absl::InvalidArgumentError(absl::StrCat("no status code is named \"", name, "\""));
}

template <class T>
NodePtr<T> MakeErrorSource(std::string op, absl::Status status) {
  return std::make_shared<ErrorSourceNode<T>>(std::move(op), std::move(status));
}

}  // namespace sluice::ops

#endif  // SLUICE_OPS_ERROR_SOURCE_H_
