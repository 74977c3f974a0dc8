// tf.train.Example / SequenceExample: parse into Tensors by a spec, decode generically, and build.
//
// Contract:
// - Input: the serialized protobuf bytes of one record (e.g. a TFRecord payload). Parsing never copies the
//   input and never reads outside it; the input only has to stay alive during the call.
// - Wire format: both packed and unpacked encodings of repeated float/int64 are accepted (mixed too);
//   unknown fields of wire types varint, 64-bit, length-delimited and 32-bit are skipped; groups and wire
//   types 6/7 are errors. Feature keys may come in any order; a key given twice keeps its last value
//   (protobuf map semantics); a Feature whose oneof is set twice keeps the last kind, and repeated lists of
//   that same kind are concatenated (protobuf merge semantics). A Feature with no kind set has zero values
//   and matches any dtype.
// - Specs (tf.io semantics): a FixedLenFeature yields a tensor of exactly `shape`; the record must hold
//   shape.num_elements() values, or, when absent, the default is used. A VarLenFeature yields all values as
//   a rank-1 tensor plus row lengths. Allowed spec dtypes are those of tf.io: kFloat32 (float_list),
//   kInt64 (int64_list) and kString (bytes_list); ValidateParseSpec rejects the others and no casts happen.
// - Errors (absl::Status, message names the record and the feature key):
//   * InvalidArgument: a required feature is missing ("... is required but could not be found."), its
//     list has the wrong type ("Data types don't match") or the wrong number of values; a bad spec.
//   * DataLoss: the bytes are not a well-formed message (truncated varint, length past the end, bad wire
//     type), with the byte offset inside the record. Features a spec does not ask for are only checked
//     for framing, not decoded (as TF's fast parser); DecodeExample checks everything.
// - Record names: `record_name` is used in messages ("<unknown>" when empty); batch calls name records by
//   `names[i]` when given, else "record <i>".
// - Threading: all functions are pure; a ParseSpec may be shared by threads that parse concurrently.
//
//   ParseSpec spec;
//   spec.fixed.push_back({"label", DType::kInt64, Shape({}), Tensor::Scalar<int64_t>(-1)});
//   spec.fixed.push_back({"image", DType::kString, Shape({}), std::nullopt});
//   spec.var.push_back({"tags", DType::kString});
//   absl::StatusOr<ParsedExample> parsed = ParseExample(record, spec, "train.tfrecord:17");
//   int64_t label = parsed->fixed[0].data<int64_t>()[0];
//
//   std::string bytes = ExampleBuilder().AddInt64s("label", {3}).AddBytes("image", {"..."}).Serialize();
#ifndef SLUICE_IO_EXAMPLE_H_
#define SLUICE_IO_EXAMPLE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/export.h"
#include "sluice/io/tensor.h"

namespace sluice {

// ---------------------------------------------------------------------------------------------------------
// Spec-driven parsing.

// A feature with a fixed number of values, parsed into a tensor of `shape`.
struct FixedLenFeature {
  std::string key;
  DType dtype = DType::kFloat32;
  Shape shape;
  // Used when the record lacks the key; must have `dtype` and shape.num_elements() elements. Without a
  // default, a missing key is an InvalidArgument error.
  std::optional<Tensor> default_value;
};

// A feature with any number of values (including none or absent), parsed into values + row lengths.
struct VarLenFeature {
  std::string key;
  DType dtype = DType::kFloat32;
};

struct SLUICE_EXPORT ParseSpec {
  std::vector<FixedLenFeature> fixed;
  std::vector<VarLenFeature> var;

  // Index into `fixed` / `var` of the feature with this key, or -1.
  int FixedIndex(std::string_view key) const;
  int VarIndex(std::string_view key) const;
};

// Checks dtypes (kFloat32, kInt64, kString only), shapes (no negative dims), defaults (dtype and element
// count) and that no key is used twice. The parse functions call it too.
SLUICE_EXPORT absl::Status ValidateParseSpec(const ParseSpec& spec);

// Ragged values of a VarLenFeature: row i owns values[offset_i, offset_i + row_lengths[i]) where offset_i is
// the sum of the earlier lengths (tf.RaggedTensor.from_row_lengths).
struct VarLenValues {
  Tensor values;       // rank 1, the spec's dtype
  Tensor row_lengths;  // rank 1, int64; one entry per row (per record, or per sequence step)
};

// The feature keys of a spec, in spec order: one table shared by every ParsedExample parsed with it.
struct FeatureNames {
  std::vector<std::string> fixed;
  std::vector<std::string> var;
  friend bool operator==(const FeatureNames&, const FeatureNames&) = default;
};

// Results in spec order: fixed[i] answers spec.fixed[i], var[i] answers spec.var[i]. The parsers also set
// `names`, so that features read by key as tf.data's dict of features: example["image"]. Batch, Unbatch,
// Rebatch, the element codec and checkpoints keep the names; a ParsedExample built by hand has none
// unless it is given a table.
struct SLUICE_EXPORT ParsedExample {
  std::vector<Tensor> fixed;
  std::vector<VarLenValues> var;
  std::shared_ptr<const FeatureNames> names;

  // The fixed (var-len) feature named `key`, or nullptr when there is none (or no names).
  const Tensor* FindFixed(std::string_view key) const;
  Tensor* FindFixed(std::string_view key);
  const VarLenValues* FindVar(std::string_view key) const;
  // The fixed feature named `key`. A key the spec does not have is a bug in the program, as a wrong type
  // in Tensor::data<T>(): it aborts with a message listing the keys there are. FindFixed does not.
  const Tensor& operator[](std::string_view key) const;
  // The var-len feature named `key`; aborts as operator[].
  const VarLenValues& var_len(std::string_view key) const;
};

// The names table of `spec`.
SLUICE_EXPORT std::shared_ptr<const FeatureNames> FeatureNamesOf(const ParseSpec& spec);

// One record. Fixed tensors have the spec shape; var row_lengths has shape [1].
SLUICE_EXPORT absl::StatusOr<ParsedExample> ParseExample(std::string_view serialized, const ParseSpec& spec,
                                                         std::string_view record_name = "");

// A batch of records, like tf.io.parse_example: fixed tensors have shape [batch, *shape] in one buffer;
// var values are concatenated over records with one row length per record. `names` (optional) must be
// empty or have one entry per record. The first bad record fails the whole batch.
SLUICE_EXPORT absl::StatusOr<ParsedExample> ParseExampleBatch(std::span<const std::string_view> serialized,
                                                              const ParseSpec& spec,
                                                              std::span<const std::string> names = {});

// A spec validated once, with its key lookup built once, for parsing many records: ParseExample and
// ParseExampleBatch redo both per call. Results and errors are theirs. Copies share the (immutable)
// compiled spec; one parser may be used by many threads at once.
//
//   absl::StatusOr<ExampleParser> parser = ExampleParser::Create(spec);
//   absl::StatusOr<ParsedExample> parsed = parser->Parse(record);
class SLUICE_EXPORT ExampleParser {
 public:
  // InvalidArgument for a spec ValidateParseSpec rejects.
  static absl::StatusOr<ExampleParser> Create(ParseSpec spec);

  const ParseSpec& spec() const;
  absl::StatusOr<ParsedExample> Parse(std::string_view serialized, std::string_view record_name = "") const;
  absl::StatusOr<ParsedExample> ParseBatch(std::span<const std::string_view> serialized,
                                           std::span<const std::string> names = {}) const;

 private:
  struct Compiled;
  explicit ExampleParser(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

// A feature list entry of a SequenceExample, parsed into [num_steps, *shape]: every step must hold
// shape.num_elements() values. A missing list is an error unless allow_missing, which gives [0, *shape].
struct FixedLenSequenceFeature {
  std::string key;
  DType dtype = DType::kFloat32;
  Shape shape;
  bool allow_missing = false;
};

struct SequenceParseSpec {
  std::vector<FixedLenSequenceFeature> fixed;
  // Values of all steps concatenated; row_lengths has one entry per step ([0] when the list is absent).
  std::vector<VarLenFeature> var;
};

struct ParsedSequenceExample {
  ParsedExample context;   // answers context_spec (same layout as ParseExample)
  ParsedExample sequence;  // answers sequence_spec: fixed[i] is [num_steps, *shape]
};

// The names tables of a sequence spec (its context's is FeatureNamesOf(context_spec)).
SLUICE_EXPORT std::shared_ptr<const FeatureNames> FeatureNamesOf(const SequenceParseSpec& spec);

// tf.io.parse_single_sequence_example. Errors as ParseExample, naming the feature list and step.
SLUICE_EXPORT absl::StatusOr<ParsedSequenceExample> ParseSequenceExample(std::string_view serialized,
                                                                         const ParseSpec& context_spec,
                                                                         const SequenceParseSpec& sequence_spec,
                                                                         std::string_view record_name = "");

// ---------------------------------------------------------------------------------------------------------
// Generic decoding (tooling, `sluice inspect`), and building.

enum class FeatureKind : uint8_t { kNone, kBytes, kFloat, kInt64 };
// "none", "bytes_list", "float_list", "int64_list".
SLUICE_EXPORT std::string_view FeatureKindName(FeatureKind kind);

// One tf.train.Feature, owning its values; only the list matching `kind` is used.
struct SLUICE_EXPORT Feature {
  FeatureKind kind = FeatureKind::kNone;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;

  static Feature Bytes(std::vector<std::string> values);
  static Feature Floats(std::vector<float> values);
  static Feature Int64s(std::vector<int64_t> values);
  size_t size() const;
  friend SLUICE_EXPORT bool operator==(const Feature& a, const Feature& b);
};

// Ordered by key, so printing is deterministic whatever the wire order was.
using Features = std::map<std::string, Feature, std::less<>>;
using FeatureLists = std::map<std::string, std::vector<Feature>, std::less<>>;

struct DecodedExample {
  Features features;
};

struct DecodedSequenceExample {
  Features context;
  FeatureLists feature_lists;
};

// Decodes every feature, validating the whole message. Errors: DataLoss on malformed bytes.
SLUICE_EXPORT absl::StatusOr<DecodedExample> DecodeExample(std::string_view serialized,
                                                           std::string_view record_name = "");
SLUICE_EXPORT absl::StatusOr<DecodedSequenceExample> DecodeSequenceExample(std::string_view serialized,
                                                                           std::string_view record_name = "");

// Serializes features as TensorFlow does: float and int64 lists packed, one map entry per key in the
// order added. Adding a key twice writes it twice (a parser keeps the last).
//
//   std::string s = ExampleBuilder().AddFloats("x", {1.f, 2.f}).AddBytes("name", {"a"}).Serialize();
class SLUICE_EXPORT ExampleBuilder {
 public:
  ExampleBuilder& Add(std::string_view key, const Feature& feature);
  ExampleBuilder& AddBytes(std::string_view key, std::span<const std::string> values);
  ExampleBuilder& AddBytes(std::string_view key, std::initializer_list<std::string_view> values);
  ExampleBuilder& AddFloats(std::string_view key, std::span<const float> values);
  ExampleBuilder& AddFloats(std::string_view key, std::initializer_list<float> values) {
    return AddFloats(key, std::span<const float>(values.begin(), values.size()));
  }
  ExampleBuilder& AddInt64s(std::string_view key, std::span<const int64_t> values);
  ExampleBuilder& AddInt64s(std::string_view key, std::initializer_list<int64_t> values) {
    return AddInt64s(key, std::span<const int64_t>(values.begin(), values.size()));
  }
  // A Feature with no kind set (zero values).
  ExampleBuilder& AddEmpty(std::string_view key);

  // The serialized Example.
  std::string Serialize() const;
  // The serialized Features message alone (the body of Example field 1 / SequenceExample context).
  std::string SerializeFeatures() const;

 private:
  std::string features_;  // concatenated map entries (Features field 1)
};

//   std::string s = SequenceExampleBuilder()
//       .AddContext("len", Feature::Int64s({2}))
//       .AddFeatureList("tokens", {Feature::Int64s({4, 5}), Feature::Int64s({6})})
//       .Serialize();
class SLUICE_EXPORT SequenceExampleBuilder {
 public:
  SequenceExampleBuilder& AddContext(std::string_view key, const Feature& feature);
  SequenceExampleBuilder& AddFeatureList(std::string_view key, std::span<const Feature> steps);
  SequenceExampleBuilder& AddFeatureList(std::string_view key, std::initializer_list<Feature> steps) {
    return AddFeatureList(key, std::span<const Feature>(steps.begin(), steps.size()));
  }
  std::string Serialize() const;

 private:
  ExampleBuilder context_;
  std::string feature_lists_;  // concatenated FeatureLists map entries
};

// Serializes one Feature message (exposed for tests that hand-assemble records).
SLUICE_EXPORT std::string SerializeFeature(const Feature& feature);

}  // namespace sluice

#endif  // SLUICE_IO_EXAMPLE_H_
