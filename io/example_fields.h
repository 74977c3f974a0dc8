// Field numbers of tf.train.Example and SequenceExample, from
// tensorflow/core/example/{example,feature}.proto.
#pragma once

#include <cstdint>

namespace sluice::example_fields {

inline constexpr uint32_t kFeatureBytesList = 1;  // Feature.kind
inline constexpr uint32_t kFeatureFloatList = 2;
inline constexpr uint32_t kFeatureInt64List = 3;
inline constexpr uint32_t kListValue = 1;  // BytesList/FloatList/Int64List.value
inline constexpr uint32_t kMapKey = 1;     // map<string, ...> entries
inline constexpr uint32_t kMapValue = 2;
inline constexpr uint32_t kFeaturesFeature = 1;  // Features.feature
inline constexpr uint32_t kExampleFeatures = 1;  // Example.features
inline constexpr uint32_t kSequenceContext = 1;  // SequenceExample.context
inline constexpr uint32_t kSequenceFeatureLists = 2;
inline constexpr uint32_t kFeatureListsFeatureList = 1;  // FeatureLists.feature_list
inline constexpr uint32_t kFeatureListFeature = 1;       // FeatureList.feature

}  // namespace sluice::example_fields
