#include "sluice/ops/element_type.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"

namespace test_types {

struct Point {
  int64_t x = 0;
  int64_t y = 0;
};
SLUICE_ELEMENT_TYPE_NAME(Point, "test.Point");

// The hook written by hand, as a hidden friend.
class Labeled {
 public:
  friend constexpr std::string_view SluiceElementTypeName(const Labeled*) { return "test.Labeled"; }
};

struct Unnamed {};

}  // namespace test_types

namespace sluice {
namespace element_type_test_file {
namespace {

TEST(ElementTypeTest, BuiltinNames) {
  EXPECT_EQ(ElementTypeName<int64_t>(), "int64");
  EXPECT_EQ(ElementTypeName<int32_t>(), "int32");
  EXPECT_EQ(ElementTypeName<uint8_t>(), "uint8");
  EXPECT_EQ(ElementTypeName<int8_t>(), "int8");
  EXPECT_EQ(ElementTypeName<uint64_t>(), "uint64");
  EXPECT_EQ(ElementTypeName<float>(), "float");
  EXPECT_EQ(ElementTypeName<double>(), "double");
  EXPECT_EQ(ElementTypeName<bool>(), "bool");
  EXPECT_EQ(ElementTypeName<std::string>(), "string");
  EXPECT_EQ(ElementTypeName<Half>(), "half");
  EXPECT_EQ(ElementTypeName<Tensor>(), "Tensor");
  EXPECT_EQ(ElementTypeName<ParsedExample>(), "ParsedExample");
  EXPECT_EQ(ElementTypeName<absl::Status>(), "Status");
}

TEST(ElementTypeTest, NamesDoNotDependOnTheSpellingOfAType) {
  // int64_t is long on LP64 Linux; long long is another type with the same width and encoding.
  EXPECT_EQ(ElementTypeName<long long>(), "int64");            // NOLINT(runtime/int)
  EXPECT_EQ(ElementTypeName<unsigned long long>(), "uint64");  // NOLINT(runtime/int)
  EXPECT_EQ(ElementTypeName<const std::string&>(), "string");
  EXPECT_EQ(ElementTypeName<const std::vector<int64_t>>(), "vector<int64>");
}

TEST(ElementTypeTest, CompositionsNameTheirParts) {
  EXPECT_EQ(ElementTypeName<std::vector<int64_t>>(), "vector<int64>");
  EXPECT_EQ((ElementTypeName<std::pair<int64_t, std::string>>()), "pair<int64,string>");
  EXPECT_EQ((ElementTypeName<std::tuple<Tensor, int64_t, std::string>>()), "tuple<Tensor,int64,string>");
  EXPECT_EQ(ElementTypeName<std::optional<float>>(), "optional<float>");
  EXPECT_EQ(ElementTypeName<absl::StatusOr<Tensor>>(), "StatusOr<Tensor>");
  EXPECT_EQ(ElementTypeName<std::tuple<>>(), "tuple<>");
  EXPECT_EQ((ElementTypeName<std::vector<std::pair<std::optional<bool>, std::vector<ParsedExample>>>>()),
            "vector<pair<optional<bool>,vector<ParsedExample>>>");
}

TEST(ElementTypeTest, UserTypesAreNamedByTheirHook) {
  EXPECT_EQ(ElementTypeName<test_types::Point>(), "test.Point");
  EXPECT_EQ(ElementTypeName<test_types::Labeled>(), "test.Labeled");
  EXPECT_EQ((ElementTypeName<std::pair<test_types::Point, std::vector<test_types::Labeled>>>()),
            "pair<test.Point,vector<test.Labeled>>");
  static_assert(kHasElementTypeName<test_types::Point>);
  static_assert(kHasElementTypeName<std::tuple<test_types::Labeled, int64_t>>);
}

TEST(ElementTypeTest, UnknownTypesAndTheirCompositionsHaveNoName) {
  EXPECT_EQ(ElementTypeName<test_types::Unnamed>(), "");
  EXPECT_EQ(ElementTypeName<std::vector<test_types::Unnamed>>(), "");
  EXPECT_EQ((ElementTypeName<std::pair<int64_t, test_types::Unnamed>>()), "");
  EXPECT_EQ((ElementTypeName<std::tuple<test_types::Point, std::optional<test_types::Unnamed>>>()), "");
  EXPECT_EQ(ElementTypeName<char>(), "");  // a character, not an int8
  EXPECT_EQ(ElementTypeName<long double>(), "");
  static_assert(!kHasElementTypeName<test_types::Unnamed>);
  static_assert(!kHasElementTypeName<std::vector<std::pair<int, test_types::Unnamed>>>);
  static_assert(kHasElementTypeName<std::vector<std::pair<int, test_types::Point>>>);
}

TEST(ElementTypeTest, NodesReportTheirElementType) {
  Dataset<int64_t> range = Range(3);
  EXPECT_EQ(range.node()->element_type_name(), "int64");
  auto pairs = range.Map([](int64_t x) { return std::make_pair(x, std::to_string(x)); });
  EXPECT_EQ(pairs.node()->element_type_name(), "pair<int64,string>");
  EXPECT_EQ(range.Batch(2).node()->element_type_name(), "Tensor");
  EXPECT_EQ(range.BatchVectors(2).node()->element_type_name(), "vector<int64>");
  EXPECT_EQ(range.Map([](int64_t x) { return std::vector<int64_t>(2, x); }).node()->element_type_name(),
            "vector<int64>");
  auto points = range.Map([](int64_t x) { return test_types::Point{x, -x}; });
  const OpNode& node = *points.node();  // through the base class, as a graph walker sees it
  EXPECT_EQ(node.element_type_name(), "test.Point");
  EXPECT_EQ(range.Map([](int64_t) { return test_types::Unnamed{}; }).node()->element_type_name(), "");
}

}  // namespace
}  // namespace element_type_test_file
}  // namespace sluice
