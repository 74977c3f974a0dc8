// ParseExample(spec): tf.data's `.map(lambda x: tf.io.parse_single_example(x, spec))` and, over batches
// of records, `.map(lambda x: tf.io.parse_example(x, spec))` (the vectorised form tf recommends: batch,
// then parse).
//
// Contract:
// - On Dataset<std::string> (one serialized tf.train.Example per element): one ParsedExample per record
//   (sluice::ParseExample): fixed[i] answers spec.fixed[i] with its exact shape, var[i] answers spec.var[i]
//   with row_lengths of shape [1].
// - On Dataset<std::vector<std::string>> (a batch of records, e.g. TFRecord(...).Batch(256)): one
//   ParsedExample per batch (sluice::ParseExampleBatch): fixed[i] is [n, *shape] in one buffer, var values
//   concatenated with one row length per record. The same layout as Batch over per-record ParsedExamples,
//   so Unbatch/Rebatch/distribution treat both alike (BatchTraits<ParsedExample>).
// - Order: one output per input element, in order.
// - Errors: an invalid spec (ValidateParseSpec) makes the dataset one InvalidArgument element. A record
//   that does not parse is an error element naming the op, the element index and the feature, e.g.
//   "ParseExample (element 7): Name: element 7, Feature: label (data type: int64) is required but could
//   not be found." (InvalidArgument; malformed bytes are DataLoss); for a batch, the first bad record
//   fails the whole batch and is named "record <i>" inside it. Input error elements pass through. Errors
//   do not end the stream.
// - Cardinality: the input's.
// - Threading/cancellation: synchronous; parses on the consumer's thread (put a parallel Map or Prefetch
//   around it for parallelism). The spec is validated and its key lookup built once (ExampleParser),
//   shared, immutable, by all iterators.
// - Checkpoints (docs/checkpoint.md): the state is the element index; the input saves its own.
// - Looking features up: FeatureByKey / VarFeatureByKey return the parsed value for a key of the spec, so
//   user code does not index fixed[] / var[] by position.
//
//   ParseSpec spec;
//   spec.fixed.push_back({"trip_start_hour", DType::kInt64, Shape({}), std::nullopt});
//   spec.var.push_back({"fare", DType::kFloat32});
//   Dataset<ParsedExample> batches = TFRecord(files, Compression::kGzip).Batch(256).ParseExample(spec);
//   for (absl::StatusOr<ParsedExample> batch : batches.MakeIterator()) {
//     absl::StatusOr<Tensor> hours = FeatureByKey(*batch, spec, "trip_start_hour");  // int64[256]
//   }
#ifndef SLUICE_OPS_PARSE_EXAMPLE_H_
#define SLUICE_OPS_PARSE_EXAMPLE_H_

#include <concepts>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/cardinality.h"
#include "sluice/io/example.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/user_function.h"

namespace sluice {

// The fixed-length feature `key` of `parsed` (which answers `spec`): a shallow copy sharing the buffer.
// NotFound when the spec has no fixed feature `key` (the message lists the spec's keys); InvalidArgument
// when `parsed` does not have the spec's layout.
SLUICE_EXPORT absl::StatusOr<Tensor> FeatureByKey(const ParsedExample& parsed, const ParseSpec& spec,
                                                  std::string_view key);
// The var-len feature `key` (values and row lengths); errors as FeatureByKey.
SLUICE_EXPORT absl::StatusOr<VarLenValues> VarFeatureByKey(const ParsedExample& parsed, const ParseSpec& spec,
                                                           std::string_view key);

namespace ops {

template <class In>
concept IsSerializedExamples = std::same_as<In, std::string> || std::same_as<In, std::vector<std::string>>;

namespace detail_parse {
// "fixed=[label:int64[]=-1, ...], var=[tags:string]" for params().
SLUICE_EXPORT std::string SpecString(const ParseSpec& spec);
}  // namespace detail_parse

// The spec as a lossless param (sluice/ops/graph.h), and back: InvalidArgument on bad bytes.
SLUICE_EXPORT EncodedParam ParseSpecParam(const ParseSpec& spec);
SLUICE_EXPORT absl::StatusOr<ParseSpec> DecodeParseSpec(std::string_view bytes);

namespace detail_parse {
// One record / one batch; errors carry the op name and element index.
SLUICE_EXPORT absl::StatusOr<ParsedExample> ParseOne(const std::string& record, const ExampleParser& parser,
                                                     int64_t index);
SLUICE_EXPORT absl::StatusOr<ParsedExample> ParseMany(const std::vector<std::string>& records,
                                                      const ExampleParser& parser, int64_t index);
}  // namespace detail_parse

template <class In>
  requires IsSerializedExamples<In>
class ParseExampleNode final : public Node<ParsedExample> {
 public:
  ParseExampleNode(NodePtr<In> input, ExampleParser parser)
      : input_(std::move(input)), parser_(std::move(parser)) {}
  std::string_view op_name() const override { return "ParseExample"; }
  DatasetSpec element_spec() const override {
    DatasetSpec spec = SpecOf(parser_.spec());
    if constexpr (std::same_as<In, std::vector<std::string>>) {
      // Batched records: the batch dimension the input's string vectors have.
      const DatasetSpec in = input_->element_spec();
      const bool known = !in.components.empty() && in.components[0].shape && !in.components[0].shape->empty();
      spec = BatchedSpec(std::move(spec), known ? (*in.components[0].shape)[0] : -1);
    }
    return spec;
  }
  bool keeps_compact_state(const Options&) const override { return true; }
  std::vector<Param> params() const override {
    return {{"spec", ParseSpecParam(parser_.spec())},
            {"batched", std::same_as<In, std::vector<std::string>>}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<ParsedExample>> MakeStream(IteratorContextPtr context) const override {
    return std::make_unique<ParseStream>(input_->MakeStream(std::move(context)), parser_);
  }
  // State: the element index (error messages name it); the input at /0.
  absl::StatusOr<std::unique_ptr<Stream<ParsedExample>>> RestoreStream(
      IteratorContextPtr context, const CheckpointReader& reader, const std::string& path) const override {
    int64_t index = 0;
    if (absl::Status s = reader.ReadState(path, &index); !s.ok()) return s;
    auto input = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
    if (!input.ok()) return input.status();
    auto stream = std::make_unique<ParseStream>(std::move(*input), parser_);
    stream->index_ = index;
    return stream;
  }

 private:
  class ParseStream final : public Stream<ParsedExample> {
   public:
    ParseStream(std::unique_ptr<Stream<In>> input, ExampleParser parser)
        : input_(std::move(input)), parser_(std::move(parser)) {}
    PollState Poll(absl::StatusOr<ParsedExample>* out) override {
      PollState state = input_->Poll(&in_);
      if (state != PollState::kReady) return state;
      const int64_t index = index_++;
      if (!in_.ok()) {
        *out = std::move(in_).status();
      } else if constexpr (std::same_as<In, std::string>) {
        *out = detail_parse::ParseOne(*in_, parser_, index);
      } else {
        *out = detail_parse::ParseMany(*in_, parser_, index);
      }
      return PollState::kReady;
    }
    Task<void> WaitReady() override { return input_->WaitReady(); }
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      writer->WriteState(path, index_);
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }
    bool Mark(MarkWriter& mark) const override {
      mark.Write(index_);
      return mark.Input(0, *input_);
    }

    int64_t index_ = 0;  // set by RestoreStream

   private:
    std::unique_ptr<Stream<In>> input_;
    ExampleParser parser_;
    absl::StatusOr<In> in_;
  };

  NodePtr<In> input_;
  ExampleParser parser_;  // the spec, validated and compiled once for every record
};

// Dataset::ParseExample's node, or an error source for an invalid spec.
template <class In>
  requires IsSerializedExamples<In>
NodePtr<ParsedExample> MakeParseExample(NodePtr<In> input, ParseSpec spec) {
    absl::StatusOr<ExampleParser> parser = ExampleParser::Create(std::move(spec));
    if (!parser.ok()) {
      const absl::Status& invalid = parser.status();
      return MakeErrorSource<ParsedExample>(
          "ParseExample", absl::Status(invalid.code(), absl::StrCat("ParseExample: ", invalid.message())));
    }
    return std::make_shared<ParseExampleNode<In>>(std::move(input), *std::move(parser));
}

}  // namespace ops
}  // namespace sluice

#endif  // SLUICE_OPS_PARSE_EXAMPLE_H_
