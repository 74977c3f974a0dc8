#include "sluice/ops/element_type_registry.h"

#include <algorithm>
#include <any>
#include <cstdint>
#include <string>
#include <string_view>
#include <typeindex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/element_type.h"
#include "sluice/ops/registration.h"

namespace registry_test {

struct Point {
  int64_t x = 0;
  int64_t y = 0;
  friend bool operator==(const Point&, const Point&) = default;
};
SLUICE_ELEMENT_TYPE_NAME(Point, "registry_test.Point");

// Named, but without a codec: known by name, cannot be encoded.
struct Handle {
  int fd = -1;
};
SLUICE_ELEMENT_TYPE_NAME(Handle, "registry_test.Handle");

// Claims a name another type holds.
struct Impostor {};
SLUICE_ELEMENT_TYPE_NAME(Impostor, "registry_test.Point");

}  // namespace registry_test

template <>
struct sluice::ElementCodec<registry_test::Point> {
  static void Encode(const registry_test::Point& p, std::string* out) {
    ElementCodec<int64_t>::Encode(p.x, out);
    ElementCodec<int64_t>::Encode(p.y, out);
  }
  static absl::Status Decode(std::string_view* in, registry_test::Point* p) {
    if (absl::Status s = ElementCodec<int64_t>::Decode(in, &p->x); !s.ok()) return s;
    return ElementCodec<int64_t>::Decode(in, &p->y);
  }
};

// At global namespace and inside a namespace: the macro works at any namespace scope.
SLUICE_REGISTER_ELEMENT_TYPE(registry_test::Point);
namespace registry_test {
SLUICE_REGISTER_ELEMENT_TYPE(Handle);
SLUICE_REGISTER_ELEMENT_TYPE(std::pair<int64_t, std::vector<Point>>);
}  // namespace registry_test

namespace sluice {
namespace element_type_registry_test_file {
namespace {

using registry_test::Handle;
using registry_test::Point;

TEST(ElementTypeRegistryTest, BuiltinsAreRegistered) {
  for (const char* name : {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "half",
                           "float", "double", "string", "Tensor", "ParsedExample", "Status"}) {
    const ElementTypeInfo* info = FindElementType(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
    EXPECT_TRUE(info->has_codec) << name;
  }
  EXPECT_EQ(FindElementType("int64")->type, std::type_index(typeid(int64_t)));
  EXPECT_EQ(FindElementType("Tensor")->type, std::type_index(typeid(Tensor)));
}

TEST(ElementTypeRegistryTest, ErasedEncodeDecodeOfABuiltin) {
  const ElementTypeInfo* info = FindElementType("string");
  ASSERT_NE(info, nullptr);
  std::string bytes;
  ASSERT_TRUE(info->encode(std::any(std::string("hello")), &bytes).ok());
  std::string direct;
  EncodeElement(std::string("hello"), &direct);
  EXPECT_EQ(bytes, direct);
  std::any back;
  ASSERT_TRUE(info->decode(bytes, &back).ok());
  EXPECT_EQ(std::any_cast<std::string>(back), "hello");
}

TEST(ElementTypeRegistryTest, UserTypeIsFoundByNameWithWorkingCodec) {
  const ElementTypeInfo* info = FindElementType("registry_test.Point");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->type, std::type_index(typeid(Point)));
  EXPECT_TRUE(info->has_codec);
  std::string bytes;
  ASSERT_TRUE(info->encode(std::any(Point{3, -4}), &bytes).ok());
  EXPECT_EQ(bytes.size(), 16u);
  std::any back;
  absl::Status status = info->decode(bytes, &back);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_NE(std::any_cast<Point>(&back), nullptr);
  EXPECT_EQ(std::any_cast<Point>(back), (Point{3, -4}));
  // The wrong type in the holder, and bytes that are not a Point.
  EXPECT_EQ(info->encode(std::any(int64_t{1}), &bytes).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(info->decode(bytes.substr(0, 15), &back).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(info->decode(bytes + "x", &back).code(), absl::StatusCode::kDataLoss);
}

TEST(ElementTypeRegistryTest, RegisteredCompositionIsFoundByItsComposedName) {
  const ElementTypeInfo* info = FindElementType("pair<int64,vector<registry_test.Point>>");
  ASSERT_NE(info, nullptr);
  std::pair<int64_t, std::vector<Point>> value{7, {{1, 2}, {3, 4}}};
  std::string bytes;
  ASSERT_TRUE(info->encode(std::any(value), &bytes).ok());
  std::any back;
  ASSERT_TRUE(info->decode(bytes, &back).ok());
  EXPECT_EQ((std::any_cast<std::pair<int64_t, std::vector<Point>>>(back)), value);
  // Compositions nobody registered are not there.
  EXPECT_EQ(FindElementType("vector<registry_test.Point>"), nullptr);
}

TEST(ElementTypeRegistryTest, NamedTypeWithoutCodecIsKnownButCannotBeEncoded) {
  const ElementTypeInfo* info = FindElementType("registry_test.Handle");
  ASSERT_NE(info, nullptr);
  EXPECT_FALSE(info->has_codec);
  std::string bytes;
  EXPECT_EQ(info->encode(std::any(Handle{3}), &bytes).code(), absl::StatusCode::kUnimplemented);
  std::any back;
  EXPECT_EQ(info->decode("", &back).code(), absl::StatusCode::kUnimplemented);
}

TEST(ElementTypeRegistryTest, UnknownNamesAreNotFound) {
  EXPECT_EQ(FindElementType("registry_test.Nothing"), nullptr);
  EXPECT_EQ(FindElementType(""), nullptr);
  EXPECT_EQ(FindElementType("int64 "), nullptr);
}

TEST(ElementTypeRegistryTest, RegistrationConflictsAndRepeats) {
  // The same type again: nothing changes.
  EXPECT_TRUE(RegisterElementType<Point>().ok());
  // Another type under a taken name.
  absl::Status conflict = RegisterElementType<registry_test::Impostor>();
  EXPECT_EQ(conflict.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(conflict.message().find("registry_test.Point"), std::string::npos) << conflict;
  EXPECT_EQ(FindElementType("registry_test.Point")->type, std::type_index(typeid(Point)));
  // A type without a name.
  struct Unnamed {};
  EXPECT_EQ(RegisterElementType<Unnamed>().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElementTypeRegistryTest, NamesAreListedSorted) {
  std::vector<std::string> names = RegisteredElementTypeNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "registry_test.Point"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "ParsedExample"), names.end());
}

TEST(ElementTypeRegistryDeathTest, StartupRegistrationOfATakenNameAborts) {
  EXPECT_DEATH((void)element_type_detail::RegisterAtStartup(MakeElementTypeInfo<registry_test::Impostor>()),
               "registry_test.Point");
}

}  // namespace
}  // namespace element_type_registry_test_file
}  // namespace sluice
