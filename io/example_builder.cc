// Serialization of tf.train.Example / SequenceExample in TensorFlow's layout (packed numeric lists).
#include <bit>
#include <string>
#include <string_view>

#include "io/example_fields.h"
#include "io/proto_wire.h"
#include "sluice/io/example.h"

namespace sluice {
namespace {

using namespace example_fields;  // NOLINT(build/namespaces): the proto field numbers

std::string BytesListBody(std::span<const std::string> values) {
  std::string body;
  for (const std::string& v : values) wire::AppendBytesField(&body, kListValue, v);
  return body;
}

std::string FloatListBody(std::span<const float> values) {
  std::string body;
  if (values.empty()) return body;  // TF writes an empty packed list as nothing
  std::string packed;
  packed.reserve(values.size() * 4);
  for (float v : values) wire::AppendFixed32(&packed, std::bit_cast<uint32_t>(v));
  wire::AppendBytesField(&body, kListValue, packed);
  return body;
}

std::string Int64ListBody(std::span<const int64_t> values) {
  std::string body;
  if (values.empty()) return body;
  std::string packed;
  for (int64_t v : values) wire::AppendVarint(&packed, static_cast<uint64_t>(v));
  wire::AppendBytesField(&body, kListValue, packed);
  return body;
}

std::string MapEntry(std::string_view key, std::string_view value) {
  std::string entry;
  wire::AppendBytesField(&entry, kMapKey, key);
  wire::AppendBytesField(&entry, kMapValue, value);
  return entry;
}

}  // namespace

std::string SerializeFeature(const Feature& feature) {
  std::string out;
  switch (feature.kind) {
    case FeatureKind::kNone:
      break;
    case FeatureKind::kBytes:
      wire::AppendBytesField(&out, kFeatureBytesList, BytesListBody(feature.bytes_list));
      break;
    case FeatureKind::kFloat:
      wire::AppendBytesField(&out, kFeatureFloatList, FloatListBody(feature.float_list));
      break;
    case FeatureKind::kInt64:
      wire::AppendBytesField(&out, kFeatureInt64List, Int64ListBody(feature.int64_list));
      break;
  }
  return out;
}

ExampleBuilder& ExampleBuilder::Add(std::string_view key, const Feature& feature) {
  wire::AppendBytesField(&features_, kFeaturesFeature, MapEntry(key, SerializeFeature(feature)));
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key, std::span<const std::string> values) {
  std::string feature;
  wire::AppendBytesField(&feature, kFeatureBytesList, BytesListBody(values));
  wire::AppendBytesField(&features_, kFeaturesFeature, MapEntry(key, feature));
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(std::string_view key, std::initializer_list<std::string_view> values) {
  std::vector<std::string> owned(values.begin(), values.end());
  return AddBytes(key, std::span<const std::string>(owned));
}

ExampleBuilder& ExampleBuilder::AddFloats(std::string_view key, std::span<const float> values) {
  std::string feature;
  wire::AppendBytesField(&feature, kFeatureFloatList, FloatListBody(values));
  wire::AppendBytesField(&features_, kFeaturesFeature, MapEntry(key, feature));
  return *this;
}

ExampleBuilder& ExampleBuilder::AddInt64s(std::string_view key, std::span<const int64_t> values) {
  std::string feature;
  wire::AppendBytesField(&feature, kFeatureInt64List, Int64ListBody(values));
  wire::AppendBytesField(&features_, kFeaturesFeature, MapEntry(key, feature));
  return *this;
}

ExampleBuilder& ExampleBuilder::AddEmpty(std::string_view key) {
  wire::AppendBytesField(&features_, kFeaturesFeature, MapEntry(key, ""));
  return *this;
}

std::string ExampleBuilder::SerializeFeatures() const { return features_; }

std::string ExampleBuilder::Serialize() const {
  std::string out;
  wire::AppendBytesField(&out, kExampleFeatures, features_);
  return out;
}

SequenceExampleBuilder& SequenceExampleBuilder::AddContext(std::string_view key, const Feature& feature) {
  context_.Add(key, feature);
  return *this;
}

SequenceExampleBuilder& SequenceExampleBuilder::AddFeatureList(std::string_view key,
                                                               std::span<const Feature> steps) {
  std::string list;
  for (const Feature& step : steps) wire::AppendBytesField(&list, kFeatureListFeature, SerializeFeature(step));
  wire::AppendBytesField(&feature_lists_, kFeatureListsFeatureList, MapEntry(key, list));
  return *this;
}

std::string SequenceExampleBuilder::Serialize() const {
  std::string out;
  wire::AppendBytesField(&out, kSequenceContext, context_.SerializeFeatures());
  wire::AppendBytesField(&out, kSequenceFeatureLists, feature_lists_);
  return out;
}

}  // namespace sluice
