// libFuzzer target for the tf.train.Example / SequenceExample parser (sluice/io/example.h).
//
// The input is one serialized record. Each run:
//   1. DecodeExample. When it succeeds, the decoded features are the oracle: re-serializing them with
//      ExampleBuilder must decode to the same features, and ParseExample / ParseExampleBatch with a spec
//      derived from them (fixed and var-len features of every dtype, plus absent keys with and without
//      defaults) must succeed with exactly those values; a spec asking for one value too many or the wrong
//      dtype must fail with InvalidArgument.
//   2. DecodeSequenceExample, with the same oracle for SequenceExampleBuilder and ParseSequenceExample.
//   3. ParseExample, ParseExampleBatch and ParseSequenceExample with a fixed spec (keys of the seed files,
//      fixed and var-len of each dtype): whatever the bytes, a success yields tensors whose dtypes and
//      shapes match the spec, and a failure is InvalidArgument or DataLoss.
// A violated invariant is __builtin_trap(), which libFuzzer reports as a crash.
//
// Build: see fuzz/README.md (clang -fsanitize=fuzzer,address,undefined; scripts/fuzz builds and runs it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"

namespace {

using sluice::DecodedExample;
using sluice::DecodedSequenceExample;
using sluice::DType;
using sluice::Feature;
using sluice::FeatureKind;
using sluice::FixedLenFeature;
using sluice::FixedLenSequenceFeature;
using sluice::ParsedExample;
using sluice::ParseSpec;
using sluice::SequenceParseSpec;
using sluice::Shape;
using sluice::Tensor;
using sluice::VarLenFeature;
using sluice::VarLenValues;

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// Derived specs use at most this many keys, so a record with thousands of features stays fast.
constexpr size_t kMaxDerivedKeys = 32;

DType DTypeOfKind(FeatureKind kind, size_t salt) {
  switch (kind) {
    case FeatureKind::kBytes:
      return DType::kString;
    case FeatureKind::kFloat:
      return DType::kFloat32;
    case FeatureKind::kInt64:
      return DType::kInt64;
    case FeatureKind::kNone:
      break;
  }
  // A Feature with no kind matches any dtype.
  constexpr DType kAny[] = {DType::kFloat32, DType::kInt64, DType::kString};
  return kAny[salt % 3];
}

// A dtype that a feature of `kind` must be refused as (kNone matches everything, so there is none).
std::optional<DType> WrongDType(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes:
      return DType::kInt64;
    case FeatureKind::kFloat:
      return DType::kString;
    case FeatureKind::kInt64:
      return DType::kFloat32;
    case FeatureKind::kNone:
      break;
  }
  return std::nullopt;
}

bool FloatsEqual(std::span<const float> a, std::span<const float> b) {
  // Bitwise: a NaN payload must survive parsing too.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool FeaturesEqual(const Feature& a, const Feature& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case FeatureKind::kBytes:
      return a.bytes_list == b.bytes_list;
    case FeatureKind::kFloat:
      return FloatsEqual(a.float_list, b.float_list);
    case FeatureKind::kInt64:
      return a.int64_list == b.int64_list;
    case FeatureKind::kNone:
      return true;
  }
  return false;
}

template <class Map>
bool FeatureMapsEqual(const Map& a, const Map& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !FeaturesEqual(ia->second, ib->second)) return false;
  }
  return true;
}

bool ListsEqual(const std::vector<Feature>& a, const std::vector<Feature>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!FeaturesEqual(a[i], b[i])) return false;
  }
  return true;
}

// The values of `features` concatenated, as a flat Feature of `dtype` (kind kNone features add nothing).
Feature Concat(std::span<const Feature> features, DType dtype) {
  Feature out;
  out.kind = dtype == DType::kString ? FeatureKind::kBytes
             : dtype == DType::kInt64 ? FeatureKind::kInt64
                                      : FeatureKind::kFloat;
  for (const Feature& f : features) {
    out.bytes_list.insert(out.bytes_list.end(), f.bytes_list.begin(), f.bytes_list.end());
    out.float_list.insert(out.float_list.end(), f.float_list.begin(), f.float_list.end());
    out.int64_list.insert(out.int64_list.end(), f.int64_list.begin(), f.int64_list.end());
  }
  return out;
}

// True when `t` holds exactly the values of `expected` (a flat Feature of the tensor's dtype).
bool TensorHolds(const Tensor& t, const Feature& expected) {
  switch (t.dtype()) {
    case DType::kString: {
      if (static_cast<size_t>(t.num_elements()) != expected.bytes_list.size()) return false;
      std::span<const std::string> v = t.span<std::string>();
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] != expected.bytes_list[i]) return false;
      }
      return true;
    }
    case DType::kFloat32:
      return FloatsEqual(t.span<float>(), expected.float_list);
    case DType::kInt64: {
      std::span<const int64_t> v = t.span<int64_t>();
      return v.size() == expected.int64_list.size() &&
             std::equal(v.begin(), v.end(), expected.int64_list.begin());
    }
    default:
      return false;
  }
}

bool RowLengthsAre(const Tensor& row_lengths, std::span<const int64_t> expected) {
  if (row_lengths.dtype() != DType::kInt64 || row_lengths.shape().rank() != 1) return false;
  std::span<const int64_t> v = row_lengths.span<int64_t>();
  return v.size() == expected.size() && std::equal(v.begin(), v.end(), expected.begin());
}

// Shape / dtype invariants of any successful ParseExample with `spec` over `batch` records (0: single).
void CheckParsedShapes(const ParsedExample& parsed, const ParseSpec& spec, int64_t batch) {
  FUZZ_CHECK(parsed.fixed.size() == spec.fixed.size());
  FUZZ_CHECK(parsed.var.size() == spec.var.size());
  for (size_t i = 0; i < spec.fixed.size(); ++i) {
    const Tensor& t = parsed.fixed[i];
    FUZZ_CHECK(t.dtype() == spec.fixed[i].dtype);
    const Shape expected = batch == 0 ? spec.fixed[i].shape : spec.fixed[i].shape.Prepend(batch);
    FUZZ_CHECK(t.shape() == expected);
    FUZZ_CHECK(t.num_elements() == expected.num_elements());
  }
  for (size_t i = 0; i < spec.var.size(); ++i) {
    const VarLenValues& v = parsed.var[i];
    FUZZ_CHECK(v.values.dtype() == spec.var[i].dtype);
    FUZZ_CHECK(v.values.shape().rank() == 1);
    FUZZ_CHECK(v.row_lengths.dtype() == DType::kInt64);
    FUZZ_CHECK(v.row_lengths.shape().rank() == 1);
    FUZZ_CHECK(v.row_lengths.num_elements() == (batch == 0 ? 1 : batch));
    int64_t total = 0;
    for (int64_t n : v.row_lengths.span<int64_t>()) {
      FUZZ_CHECK(n >= 0);
      total += n;
    }
    FUZZ_CHECK(total == v.values.num_elements());
  }
}

void CheckFailure(const absl::Status& status) {
  FUZZ_CHECK(!status.ok());
  FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument || status.code() == absl::StatusCode::kDataLoss);
  FUZZ_CHECK(!status.message().empty());
}

// A key that `features` does not have.
template <class Map>
std::string AbsentKey(const Map& features, std::string base) {
  while (features.find(base) != features.end()) base.push_back('~');
  return base;
}

// ---------------------------------------------------------------------------------------------------------
// Example: the decoded features are the oracle.

void CheckExampleAgainstDecoded(std::string_view record, const DecodedExample& decoded) {
  // Round trip through the builder.
  sluice::ExampleBuilder builder;
  for (const auto& [key, feature] : decoded.features) builder.Add(key, feature);
  const std::string rebuilt = builder.Serialize();
  absl::StatusOr<DecodedExample> again = sluice::DecodeExample(rebuilt);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(FeatureMapsEqual(again->features, decoded.features));

  // A spec asking for (a bounded number of) the record's features, in three layouts.
  ParseSpec spec;
  std::vector<Feature> fixed_expected, var_expected;
  size_t salt = 0;
  for (const auto& [key, feature] : decoded.features) {
    if (salt == kMaxDerivedKeys) break;
    const DType dtype = DTypeOfKind(feature.kind, salt);
    const int64_t n = static_cast<int64_t>(feature.size());
    const Feature flat = Concat(std::span<const Feature>(&feature, 1), dtype);
    switch ((salt + key.size()) % 3) {
      case 0:
        spec.var.push_back({key, dtype});
        var_expected.push_back(flat);
        break;
      case 1:
        spec.fixed.push_back({key, dtype, Shape({n}), std::nullopt});
        fixed_expected.push_back(flat);
        break;
      default:
        // A present key ignores its default.
        spec.fixed.push_back({key, dtype, n == 1 ? Shape() : Shape({1, n}),
                              Tensor::Zeros(dtype, n == 1 ? Shape() : Shape({1, n}))});
        fixed_expected.push_back(flat);
        break;
    }
    ++salt;
  }
  // Absent keys: a default is used; a var-len feature is empty.
  const std::string absent = AbsentKey(decoded.features, "absent");
  spec.fixed.push_back({absent, DType::kInt64, Shape({2}), Tensor::FromVector<int64_t>({7, -8})});
  fixed_expected.push_back(Feature::Int64s({7, -8}));
  spec.var.push_back({absent + "+var", DType::kString});
  var_expected.push_back(Feature::Bytes({}));
  if (decoded.features.find(absent + "+var") != decoded.features.end()) return;  // (key clash: skip)

  absl::StatusOr<ParsedExample> parsed = sluice::ParseExample(record, spec, "fuzz");
  FUZZ_CHECK(parsed.ok());
  CheckParsedShapes(*parsed, spec, 0);
  for (size_t i = 0; i < spec.fixed.size(); ++i) FUZZ_CHECK(TensorHolds(parsed->fixed[i], fixed_expected[i]));
  for (size_t i = 0; i < spec.var.size(); ++i) {
    FUZZ_CHECK(TensorHolds(parsed->var[i].values, var_expected[i]));
    const int64_t n = static_cast<int64_t>(var_expected[i].size());
    FUZZ_CHECK(RowLengthsAre(parsed->var[i].row_lengths, std::span<const int64_t>(&n, 1)));
  }

  // The same record twice in a batch: rows repeat, values concatenate.
  const std::string_view records[2] = {record, record};
  absl::StatusOr<ParsedExample> batch = sluice::ParseExampleBatch(records, spec);
  FUZZ_CHECK(batch.ok());
  CheckParsedShapes(*batch, spec, 2);
  for (size_t i = 0; i < spec.fixed.size(); ++i) {
    const Feature twice[2] = {fixed_expected[i], fixed_expected[i]};
    FUZZ_CHECK(TensorHolds(batch->fixed[i], Concat(twice, spec.fixed[i].dtype)));
  }
  for (size_t i = 0; i < spec.var.size(); ++i) {
    const Feature twice[2] = {var_expected[i], var_expected[i]};
    FUZZ_CHECK(TensorHolds(batch->var[i].values, Concat(twice, spec.var[i].dtype)));
    const int64_t n = static_cast<int64_t>(var_expected[i].size());
    const int64_t rows[2] = {n, n};
    FUZZ_CHECK(RowLengthsAre(batch->var[i].row_lengths, rows));
  }

  // Refusals: one value too many, the wrong dtype, a missing required key.
  for (const auto& [key, feature] : decoded.features) {
    ParseSpec bad;
    bad.fixed.push_back({key, DTypeOfKind(feature.kind, 0), Shape({static_cast<int64_t>(feature.size()) + 1}),
                         std::nullopt});
    absl::StatusOr<ParsedExample> too_many = sluice::ParseExample(record, bad);
    FUZZ_CHECK(!too_many.ok() && too_many.status().code() == absl::StatusCode::kInvalidArgument);
    if (std::optional<DType> wrong = WrongDType(feature.kind)) {
      ParseSpec mistyped;
      mistyped.var.push_back({key, *wrong});
      absl::StatusOr<ParsedExample> r = sluice::ParseExample(record, mistyped);
      FUZZ_CHECK(!r.ok() && r.status().code() == absl::StatusCode::kInvalidArgument);
    }
    break;  // one key is enough per input; the fuzzer varies which one comes first
  }
  ParseSpec required;
  required.fixed.push_back({absent, DType::kFloat32, Shape(), std::nullopt});
  absl::StatusOr<ParsedExample> missing = sluice::ParseExample(record, required);
  FUZZ_CHECK(!missing.ok() && missing.status().code() == absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------------------
// SequenceExample: the decoded context and feature lists are the oracle.

// The one kind shared by every step that has a kind, kNone when none has, nullopt when they disagree.
std::optional<FeatureKind> CommonKind(const std::vector<Feature>& steps) {
  FeatureKind kind = FeatureKind::kNone;
  for (const Feature& f : steps) {
    if (f.kind == FeatureKind::kNone) continue;
    if (kind != FeatureKind::kNone && kind != f.kind) return std::nullopt;
    kind = f.kind;
  }
  return kind;
}

void CheckSequenceAgainstDecoded(std::string_view record, const DecodedSequenceExample& decoded) {
  sluice::SequenceExampleBuilder builder;
  for (const auto& [key, feature] : decoded.context) builder.AddContext(key, feature);
  for (const auto& [key, steps] : decoded.feature_lists) builder.AddFeatureList(key, steps);
  const std::string rebuilt = builder.Serialize();
  absl::StatusOr<DecodedSequenceExample> again = sluice::DecodeSequenceExample(rebuilt);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(FeatureMapsEqual(again->context, decoded.context));
  FUZZ_CHECK(again->feature_lists.size() == decoded.feature_lists.size());
  for (auto ia = again->feature_lists.cbegin(), ib = decoded.feature_lists.cbegin(); ia != again->feature_lists.cend();
       ++ia, ++ib) {
    FUZZ_CHECK(ia->first == ib->first && ListsEqual(ia->second, ib->second));
  }

  ParseSpec context_spec;
  std::vector<Feature> context_fixed, context_var;
  size_t salt = 0;
  for (const auto& [key, feature] : decoded.context) {
    if (salt == kMaxDerivedKeys) break;
    const DType dtype = DTypeOfKind(feature.kind, salt);
    const Feature flat = Concat(std::span<const Feature>(&feature, 1), dtype);
    if (salt % 2 == 0) {
      context_spec.fixed.push_back({key, dtype, Shape({static_cast<int64_t>(feature.size())}), std::nullopt});
      context_fixed.push_back(flat);
    } else {
      context_spec.var.push_back({key, dtype});
      context_var.push_back(flat);
    }
    ++salt;
  }

  SequenceParseSpec sequence_spec;
  std::vector<Feature> list_fixed, list_var;
  std::vector<std::vector<int64_t>> list_var_rows;
  std::vector<int64_t> list_fixed_steps;
  salt = 0;
  for (const auto& [key, steps] : decoded.feature_lists) {
    if (salt == kMaxDerivedKeys) break;
    const std::optional<FeatureKind> kind = CommonKind(steps);
    if (!kind) continue;  // mixed kinds: no dtype accepts the list
    const DType dtype = DTypeOfKind(*kind, salt);
    bool same_size = !steps.empty();
    for (const Feature& f : steps) same_size = same_size && f.size() == steps.front().size();
    if (same_size && salt % 2 == 0) {
      sequence_spec.fixed.push_back({key, dtype, Shape({static_cast<int64_t>(steps.front().size())}), false});
      list_fixed.push_back(Concat(steps, dtype));
      list_fixed_steps.push_back(static_cast<int64_t>(steps.size()));
    } else {
      sequence_spec.var.push_back({key, dtype});
      list_var.push_back(Concat(steps, dtype));
      std::vector<int64_t> rows;
      for (const Feature& f : steps) rows.push_back(static_cast<int64_t>(f.size()));
      list_var_rows.push_back(std::move(rows));
    }
    ++salt;
  }
  // An absent list: allowed when allow_missing ([0, *shape]), and as var-len (no rows).
  const std::string absent = AbsentKey(decoded.feature_lists, "absent");
  if (decoded.feature_lists.find(absent + "+var") != decoded.feature_lists.end()) return;  // (key clash: skip)
  sequence_spec.fixed.push_back({absent, DType::kFloat32, Shape({3}), true});
  list_fixed.push_back(Feature::Floats({}));
  list_fixed_steps.push_back(0);
  sequence_spec.var.push_back({absent + "+var", DType::kInt64});
  list_var.push_back(Feature::Int64s({}));
  list_var_rows.emplace_back();

  absl::StatusOr<sluice::ParsedSequenceExample> parsed =
      sluice::ParseSequenceExample(record, context_spec, sequence_spec, "fuzz");
  FUZZ_CHECK(parsed.ok());
  CheckParsedShapes(parsed->context, context_spec, 0);
  for (size_t i = 0; i < context_spec.fixed.size(); ++i) {
    FUZZ_CHECK(TensorHolds(parsed->context.fixed[i], context_fixed[i]));
  }
  for (size_t i = 0; i < context_spec.var.size(); ++i) {
    FUZZ_CHECK(TensorHolds(parsed->context.var[i].values, context_var[i]));
  }
  FUZZ_CHECK(parsed->sequence.fixed.size() == sequence_spec.fixed.size());
  FUZZ_CHECK(parsed->sequence.var.size() == sequence_spec.var.size());
  for (size_t i = 0; i < sequence_spec.fixed.size(); ++i) {
    const Tensor& t = parsed->sequence.fixed[i];
    FUZZ_CHECK(t.dtype() == sequence_spec.fixed[i].dtype);
    FUZZ_CHECK(t.shape() == sequence_spec.fixed[i].shape.Prepend(list_fixed_steps[i]));
    FUZZ_CHECK(TensorHolds(t, list_fixed[i]));
  }
  for (size_t i = 0; i < sequence_spec.var.size(); ++i) {
    FUZZ_CHECK(TensorHolds(parsed->sequence.var[i].values, list_var[i]));
    FUZZ_CHECK(RowLengthsAre(parsed->sequence.var[i].row_lengths, list_var_rows[i]));
  }

  // A required list that is absent is refused.
  SequenceParseSpec required;
  required.fixed.push_back({absent, DType::kInt64, Shape(), false});
  absl::StatusOr<sluice::ParsedSequenceExample> missing =
      sluice::ParseSequenceExample(record, ParseSpec(), required);
  FUZZ_CHECK(!missing.ok() && missing.status().code() == absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------------------
// Fixed specs: keys of the seed files, each dtype fixed and var-len.

ParseSpec MakeStaticSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"x_int", DType::kInt64, Shape({3}), std::nullopt});
  spec.fixed.push_back({"x_float", DType::kFloat32, Shape({1, 3}), Tensor::Zeros(DType::kFloat32, Shape({1, 3}))});
  spec.fixed.push_back({"x_byte", DType::kString, Shape(), Tensor::Scalar<std::string>("none")});
  spec.fixed.push_back({"fare", DType::kFloat32, Shape(), Tensor::Scalar<float>(0.f)});
  spec.fixed.push_back({"trip_start_hour", DType::kInt64, Shape({1}), Tensor::FromVector<int64_t>({-1})});
  spec.fixed.push_back({"empty", DType::kInt64, Shape({0}), std::nullopt});
  spec.var.push_back({"company", DType::kString});
  spec.var.push_back({"tips", DType::kFloat32});
  spec.var.push_back({"trip_seconds", DType::kInt64});
  spec.var.push_back({"species", DType::kString});
  spec.var.push_back({"body_mass_g", DType::kFloat32});
  return spec;
}

SequenceParseSpec MakeStaticSequenceSpec() {
  SequenceParseSpec spec;
  spec.fixed.push_back({"x_int_seq", DType::kInt64, Shape({3}), true});
  spec.fixed.push_back({"x_float_seq", DType::kFloat32, Shape({1, 3}), true});
  spec.var.push_back({"x_byte_seq", DType::kString});
  spec.var.push_back({"x_float_seq_v", DType::kFloat32});
  spec.var.push_back({"x_int_seq_v", DType::kInt64});
  return spec;
}

void CheckStaticSpecs(std::string_view record) {
  static const ParseSpec* const spec = new ParseSpec(MakeStaticSpec());
  static const SequenceParseSpec* const sequence_spec = new SequenceParseSpec(MakeStaticSequenceSpec());

  absl::StatusOr<ParsedExample> parsed = sluice::ParseExample(record, *spec);
  if (parsed.ok()) {
    CheckParsedShapes(*parsed, *spec, 0);
  } else {
    CheckFailure(parsed.status());
  }

  // Batch of three; the middle record is truncated unless the record is tiny.
  const std::string_view records[3] = {record, record.substr(0, record.size() / 2), record};
  const std::string names[3] = {"first", "half", "last"};
  absl::StatusOr<ParsedExample> batch = sluice::ParseExampleBatch(records, *spec, names);
  if (batch.ok()) {
    CheckParsedShapes(*batch, *spec, 3);
    FUZZ_CHECK(parsed.ok());  // the whole record is in the batch
  } else {
    CheckFailure(batch.status());
    FUZZ_CHECK(!parsed.ok() || batch.status().message().find("half") != std::string_view::npos);
  }

  absl::StatusOr<sluice::ParsedSequenceExample> sequence =
      sluice::ParseSequenceExample(record, *spec, *sequence_spec);
  if (sequence.ok()) {
    CheckParsedShapes(sequence->context, *spec, 0);
    FUZZ_CHECK(sequence->sequence.fixed.size() == sequence_spec->fixed.size());
    FUZZ_CHECK(sequence->sequence.var.size() == sequence_spec->var.size());
    for (size_t i = 0; i < sequence_spec->fixed.size(); ++i) {
      const Tensor& t = sequence->sequence.fixed[i];
      const Shape& shape = sequence_spec->fixed[i].shape;
      FUZZ_CHECK(t.dtype() == sequence_spec->fixed[i].dtype);
      FUZZ_CHECK(t.shape().rank() == shape.rank() + 1);
      FUZZ_CHECK(t.shape() == shape.Prepend(t.shape().dim(0)));
    }
    for (size_t i = 0; i < sequence_spec->var.size(); ++i) {
      const VarLenValues& v = sequence->sequence.var[i];
      FUZZ_CHECK(v.values.dtype() == sequence_spec->var[i].dtype && v.values.shape().rank() == 1);
      int64_t total = 0;
      for (int64_t n : v.row_lengths.span<int64_t>()) total += n;
      FUZZ_CHECK(total == v.values.num_elements());
    }
  } else {
    CheckFailure(sequence.status());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view record(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<DecodedExample> decoded = sluice::DecodeExample(record, "fuzz");
  if (decoded.ok()) {
    CheckExampleAgainstDecoded(record, *decoded);
  } else {
    FUZZ_CHECK(decoded.status().code() == absl::StatusCode::kDataLoss);
  }

  absl::StatusOr<DecodedSequenceExample> sequence = sluice::DecodeSequenceExample(record, "fuzz");
  if (sequence.ok()) {
    CheckSequenceAgainstDecoded(record, *sequence);
  } else {
    FUZZ_CHECK(sequence.status().code() == absl::StatusCode::kDataLoss);
  }

  CheckStaticSpecs(record);
  return 0;
}
