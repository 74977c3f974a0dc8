#include "tools/sluice/idx.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/zlib_stream.h"

namespace sluice::io {
namespace idx_test_file {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

// A fresh directory per test, removed at the end.
class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("sluice_idx_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    return path;
  }

  std::filesystem::path dir_;
};

std::string Header(uint8_t type, std::vector<uint32_t> dims) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    h.push_back(static_cast<char>(d >> 24));
    h.push_back(static_cast<char>(d >> 16));
    h.push_back(static_cast<char>(d >> 8));
    h.push_back(static_cast<char>(d));
  }
  return h;
}

// absl::string_view prints as a char list in gmock messages; a std::string prints as text.
std::string Msg(const absl::Status& s) { return std::string(s.message()); }

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) & 0xFF);
  return s;
}

std::string Gzip(const std::string& data) {
  absl::StatusOr<Deflater> d = Deflater::Create(ZlibFormat::kGzip);
  EXPECT_TRUE(d.ok()) << d.status();
  std::string out;
  EXPECT_TRUE(d->Compress({reinterpret_cast<const std::byte*>(data.data()), data.size()}, &out).ok());
  EXPECT_TRUE(d->Finish(&out).ok());
  return out;
}

TEST_F(IdxTest, ReadsUint8ThreeDims) {
  const std::string data = Pattern(3 * 4 * 5);
  const std::string path = Write("images-idx3-ubyte", Header(0x08, {3, 4, 5}) + data);
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->type, IdxType::kUint8);
  EXPECT_THAT(a->dims, ElementsAre(3u, 4u, 5u));
  EXPECT_EQ(a->magic(), 2051u);
  EXPECT_EQ(a->num_elements(), 60u);
  EXPECT_EQ(a->bytes, data);
  EXPECT_EQ(a->ElementAsInt64(1), 10);
}

TEST_F(IdxTest, ReadsUint8OneDim) {
  const std::string data = {0, 9, 5, static_cast<char>(255)};
  const std::string path = Write("labels-idx1-ubyte", Header(0x08, {4}) + data);
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->magic(), 2049u);
  EXPECT_THAT(a->dims, ElementsAre(4u));
  EXPECT_EQ(a->ElementAsInt64(3), 255);
}

TEST_F(IdxTest, MultiByteTypesAreBigEndian) {
  // int16 -2 and 258; int32 -7; float32 1.5 (0x3FC00000).
  const std::string i16 =
      Header(0x0B, {2}) + std::string{static_cast<char>(0xFF), static_cast<char>(0xFE), 1, 2};
  absl::StatusOr<IdxArray> a = ReadIdxFile(Write("i16", i16));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ElementAsInt64(0), -2);
  EXPECT_EQ(a->ElementAsInt64(1), 258);

  const std::string i32 = Header(0x0C, {1}) + std::string{static_cast<char>(0xFF), static_cast<char>(0xFF),
                                                          static_cast<char>(0xFF), static_cast<char>(0xF9)};
  a = ReadIdxFile(Write("i32", i32));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ElementAsInt64(0), -7);

  const std::string f32 = Header(0x0D, {1}) + std::string{0x3F, static_cast<char>(0xC0), 0, 0};
  a = ReadIdxFile(Write("f32", f32));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ElementAsDouble(0), 1.5);
  EXPECT_EQ(a->element_size(), 4u);
}

TEST_F(IdxTest, ReadsGzipTransparently) {
  const std::string data = Pattern(10 * 28 * 28);
  const std::string plain = Header(0x08, {10, 28, 28}) + data;
  // The name has no .gz suffix on purpose: detection is by content.
  const std::string path = Write("images-compressed", Gzip(plain));
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->dims, ElementsAre(10u, 28u, 28u));
  EXPECT_EQ(a->bytes, data);
}

TEST_F(IdxTest, EmptyArrayIsValid) {
  absl::StatusOr<IdxArray> a = ReadIdxFile(Write("empty", Header(0x08, {0, 28, 28})));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_elements(), 0u);
  EXPECT_TRUE(a->bytes.empty());
}

TEST_F(IdxTest, MissingFileIsNotFound) {
  const std::string path = (dir_ / "nope").string();
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(a.status()), HasSubstr(path));
}

TEST_F(IdxTest, BadMagicIsInvalidArgument) {
  std::string bytes = Header(0x08, {2}) + "ab";
  bytes[0] = 0x12;
  const std::string path = Write("bad_magic", bytes);
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("not an IDX file")));
}

TEST_F(IdxTest, UnknownTypeIsInvalidArgument) {
  const std::string path = Write("bad_type", Header(0x0A, {2}) + "ab");
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("element type byte 0x0a")));
}

TEST_F(IdxTest, ZeroDimsIsInvalidArgument) {
  const std::string path = Write("zero_dims", Header(0x08, {}) + "a");
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("zero dimensions")));
}

TEST_F(IdxTest, OverflowingDimsAreInvalidArgument) {
  const std::string path = Write("huge", Header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("overflow")));
}

TEST_F(IdxTest, TruncatedDataIsDataLoss) {
  const std::string path = Write("truncated", Header(0x08, {3, 28, 28}) + Pattern(1000));
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()),
              AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("expected 2368 bytes"),
                    HasSubstr("3x28x28"), HasSubstr("file has 1016")));
}

TEST_F(IdxTest, TruncatedHeaderIsDataLoss) {
  // Declares 3 dims but holds only one of them.
  const std::string path = Write("short_header", Header(0x08, {3, 28, 28}).substr(0, 9));
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("header")));

  absl::StatusOr<IdxArray> empty = ReadIdxFile(Write("empty_file", ""));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(IdxTest, TrailingBytesAreDataLoss) {
  const std::string path = Write("trailing", Header(0x08, {4}) + "abcdXY");
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(path), HasSubstr("trailing bytes"),
                                     HasSubstr("expected 12 bytes"), HasSubstr("file has 14")));
}

TEST_F(IdxTest, GzipSizeErrorsNameTheDecompressedSize) {
  const std::string trailing = Write("trailing.gz", Gzip(Header(0x08, {4}) + Pattern(4 + 100000)));
  absl::StatusOr<IdxArray> a = ReadIdxFile(trailing);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(trailing), HasSubstr("trailing bytes"),
                                     HasSubstr("decompressed stream has 100012")));

  const std::string truncated = Write("truncated.gz", Gzip(Header(0x08, {5, 28, 28}) + Pattern(100)));
  a = ReadIdxFile(truncated);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()), AllOf(HasSubstr(truncated), HasSubstr("truncated")));

  const std::string bad_magic = Write("bad.gz", Gzip("hello world, not idx"));
  a = ReadIdxFile(bad_magic);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(IdxTest, CorruptGzipIsDataLoss) {
  std::string gz = Gzip(Header(0x08, {1000}) + Pattern(1000));
  gz.resize(gz.size() / 2);  // cut in the middle of the deflate stream
  const std::string path = Write("cut.gz", gz);
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Msg(a.status()), HasSubstr(path));
}

TEST(IdxRealDataTest, FashionMnistHeaders) {
  const std::string dir = kFashionDir;
  if (!std::filesystem::exists(dir + "/train-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  absl::StatusOr<IdxArray> labels = ReadIdxFile(dir + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->magic(), 2049u);
  EXPECT_THAT(labels->dims, ElementsAre(10000u));
  absl::StatusOr<IdxArray> train_labels = ReadIdxFile(dir + "/train-labels-idx1-ubyte.gz");
  ASSERT_TRUE(train_labels.ok()) << train_labels.status();
  EXPECT_THAT(train_labels->dims, ElementsAre(60000u));
  int counts[10] = {};
  for (char c : train_labels->bytes) {
    ASSERT_LT(static_cast<unsigned char>(c), 10);
    ++counts[static_cast<unsigned char>(c)];
  }
  for (int n : counts) EXPECT_EQ(n, 6000);  // Fashion-MNIST is balanced
  absl::StatusOr<IdxArray> images = ReadIdxFile(dir + "/train-images-idx3-ubyte.gz");
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->magic(), 2051u);
  EXPECT_THAT(images->dims, ElementsAre(60000u, 28u, 28u));
  EXPECT_EQ(images->bytes.size(), 60000u * 28 * 28);
}

}  // namespace
}  // namespace idx_test_file
}  // namespace sluice::io
