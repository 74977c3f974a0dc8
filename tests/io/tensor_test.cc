#include "sluice/io/tensor.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace sluice {
namespace tensor_test_file {
namespace {

bool IsAligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(TensorTest, DTypeSizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeSize(DType::kUInt8), 1u);
  EXPECT_EQ(DTypeSize(DType::kInt32), 4u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeSize(DType::kFloat64), 8u);
  EXPECT_EQ(DTypeSize(DType::kString), sizeof(std::string));
  EXPECT_EQ(DTypeName(DType::kFloat32), "float");
  EXPECT_EQ(DTypeName(DType::kInt64), "int64");
  EXPECT_EQ(DTypeName(DType::kString), "string");
  EXPECT_EQ(DTypeName(DType::kFloat16), "half");
}

TEST(TensorTest, ShapeBasics) {
  Shape s({2, 3, 4});
  EXPECT_EQ(s.rank(), 3u);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  EXPECT_EQ(Shape().num_elements(), 1);
  EXPECT_EQ(Shape().DebugString(), "[]");
  EXPECT_EQ(s.Prepend(5), Shape({5, 2, 3, 4}));
  EXPECT_TRUE(s.IsValid());
  EXPECT_FALSE(Shape({2, -1}).IsValid());
  EXPECT_FALSE(Shape({std::numeric_limits<int64_t>::max(), 2}).IsValid());
  EXPECT_TRUE(Shape({0, std::numeric_limits<int64_t>::max()}).IsValid());
}

TEST(TensorTest, AllocationIsAligned) {
  const DType dtypes[] = {DType::kBool,    DType::kUInt8,   DType::kInt32,   DType::kInt64,
                          DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kString};
  for (DType dtype : dtypes) {
    for (int64_t n : {0, 1, 3, 17, 1000}) {
      Tensor t = Tensor::Empty(dtype, Shape({n}));
      ASSERT_NE(t.raw_data(), nullptr);
      EXPECT_TRUE(IsAligned64(t.raw_data())) << DTypeName(dtype) << " n=" << n;
      EXPECT_EQ(t.num_elements(), n);
      EXPECT_EQ(t.num_bytes(), static_cast<size_t>(n) * DTypeSize(dtype));
      Tensor z = Tensor::Zeros(dtype, Shape({n}));
      EXPECT_TRUE(IsAligned64(z.raw_data()));
    }
  }
}

TEST(TensorTest, ZerosAreZero) {
  Tensor f = Tensor::Zeros(DType::kFloat32, Shape({3, 5}));
  for (float v : f.span<float>()) EXPECT_EQ(v, 0.0f);
  Tensor s = Tensor::Zeros(DType::kString, Shape({4}));
  for (const std::string& v : s.span<std::string>()) EXPECT_TRUE(v.empty());
}

TEST(TensorTest, InvalidShapeBecomesEmpty) {
  Tensor t = Tensor::Empty(DType::kFloat32, Shape({-3}));
  EXPECT_EQ(t.shape(), Shape({0}));
  EXPECT_EQ(t.num_elements(), 0);
}

TEST(TensorTest, DefaultTensorIsEmpty) {
  Tensor t;
  EXPECT_EQ(t.num_elements(), 0);
  EXPECT_EQ(t.raw_data(), nullptr);
  EXPECT_FALSE(t.SharesBufferWith(t));
  absl::StatusOr<Tensor> slice = t.Slice(0, 0);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->num_elements(), 0);
  EXPECT_TRUE(t.Reshape(Shape({0, 5})).ok());
  Tensor copy = t;
  copy = Tensor::Zeros(DType::kInt32, Shape({2}));
  copy = t;
  EXPECT_EQ(copy.raw_data(), nullptr);
}

TEST(TensorTest, HugeShapeBecomesEmptyInsteadOfOverflowing) {
  Tensor t = Tensor::Empty(DType::kString, Shape({int64_t{1} << 60}));
  EXPECT_EQ(t.num_elements(), 0);
}

TEST(TensorTest, CopiesAcrossThreadsKeepTheBufferAlive) {
  // The reference count is shared by threads that copy and drop views; TSan checks the ordering.
  Tensor t = Tensor::FromVector<std::string>({"a", "b", "c", "d"});
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < 4; ++i) {
    Tensor mine = t;
    threads.emplace_back([mine = std::move(mine), i, &bad]() mutable {
      for (int k = 0; k < 1000; ++k) {
        Tensor view = *mine.SubTensor(i);
        Tensor copy = view;
        if (copy.data<std::string>()[0].size() != 1) bad.fetch_add(1);
      }
    });
  }
  t = Tensor();
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(TensorTest, FromVectorAndScalar) {
  Tensor v = Tensor::FromVector<int64_t>({1, 2, 3});
  EXPECT_EQ(v.dtype(), DType::kInt64);
  EXPECT_EQ(v.shape(), Shape({3}));
  EXPECT_EQ(v.data<int64_t>()[2], 3);
  Tensor s = Tensor::Scalar<double>(2.5);
  EXPECT_EQ(s.shape().rank(), 0u);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.data<double>()[0], 2.5);
}

TEST(TensorTest, SliceSharesBuffer) {
  Tensor t = Tensor::Empty(DType::kInt32, Shape({4, 3}));
  for (int i = 0; i < 12; ++i) t.data<int32_t>()[i] = i;
  absl::StatusOr<Tensor> rows = t.Slice(1, 3);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), Shape({2, 3}));
  EXPECT_TRUE(rows->SharesBufferWith(t));
  EXPECT_EQ(rows->data<int32_t>()[0], 3);
  EXPECT_EQ(rows->data<int32_t>()[5], 8);
  // Writes through the view land in the original.
  rows->data<int32_t>()[0] = 100;
  EXPECT_EQ(t.data<int32_t>()[3], 100);

  absl::StatusOr<Tensor> row = t.SubTensor(2);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->shape(), Shape({3}));
  EXPECT_EQ(row->data<int32_t>()[0], 6);

  absl::StatusOr<Tensor> empty = t.Slice(4, 4);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(TensorTest, SliceOutlivesOriginal) {
  absl::StatusOr<Tensor> view;
  {
    Tensor t = Tensor::FromVector<std::string>({"a", "bb", "ccc"});
    view = t.Slice(1, 3);
  }
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->data<std::string>()[1], "ccc");
}

TEST(TensorTest, SliceErrors) {
  Tensor t = Tensor::Zeros(DType::kFloat32, Shape({4, 2}));
  EXPECT_EQ(t.Slice(-1, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Slice(3, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Slice(0, 5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.SubTensor(4).status().code(), absl::StatusCode::kInvalidArgument);
  Tensor scalar = Tensor::Scalar<float>(1.0f);
  EXPECT_EQ(scalar.Slice(0, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, ReshapeSharesBuffer) {
  Tensor t = Tensor::Zeros(DType::kFloat64, Shape({2, 6}));
  absl::StatusOr<Tensor> r = t.Reshape(Shape({3, 4}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->SharesBufferWith(t));
  EXPECT_EQ(r->raw_data(), t.raw_data());
  EXPECT_EQ(t.Reshape(Shape({5})).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Reshape(Shape({-2, -6})).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, MoveIsCheapAndLeavesSourceEmpty) {
  Tensor t = Tensor::Zeros(DType::kFloat32, Shape({1000}));
  void* data = t.raw_data();
  Tensor moved = std::move(t);
  EXPECT_EQ(moved.raw_data(), data);  // no copy of the elements
  EXPECT_EQ(moved.num_elements(), 1000);
  EXPECT_EQ(t.num_elements(), 0);  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(t.raw_data(), nullptr);
  Tensor assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.raw_data(), data);
}

TEST(TensorTest, CopyIsShallowCloneIsDeep) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3});
  Tensor copy = t;
  EXPECT_TRUE(copy.SharesBufferWith(t));
  Tensor clone = t.Clone();
  EXPECT_FALSE(clone.SharesBufferWith(t));
  EXPECT_TRUE(IsAligned64(clone.raw_data()));
  EXPECT_EQ(clone, t);
  clone.data<float>()[0] = 9;
  EXPECT_EQ(t.data<float>()[0], 1);
  EXPECT_FALSE(clone == t);
}

TEST(TensorTest, StringTensors) {
  Tensor t = Tensor::Empty(DType::kString, Shape({2, 2}));
  std::span<std::string> s = t.span<std::string>();
  s[0] = "short";
  s[3] = std::string(1000, 'x');  // heap-allocated: the buffer must destroy it (ASan checks the leak)
  Tensor clone = t.Clone();
  EXPECT_EQ(clone.data<std::string>()[3].size(), 1000u);
  EXPECT_EQ(clone, t);
  absl::StatusOr<Tensor> row = t.SubTensor(1);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->data<std::string>()[1], std::string(1000, 'x'));
}

TEST(TensorTest, Equality) {
  EXPECT_EQ(Tensor::FromVector<int64_t>({1, 2}), Tensor::FromVector<int64_t>({1, 2}));
  EXPECT_FALSE(Tensor::FromVector<int64_t>({1, 2}) == Tensor::FromVector<int64_t>({1, 3}));
  EXPECT_FALSE(Tensor::FromVector<int64_t>({1, 2}) == Tensor::FromVector<int32_t>({1, 2}));
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4});
  EXPECT_FALSE(a == *a.Reshape(Shape({2, 2})));
  EXPECT_EQ(Tensor::FromVector<std::string>({"a"}), Tensor::FromVector<std::string>({"a"}));
}

TEST(TensorTest, DebugString) {
  EXPECT_EQ(Tensor::FromVector<int64_t>({1, 2, 3}).DebugString(), "int64[3] {1, 2, 3}");
  EXPECT_EQ(Tensor::FromVector<std::string>({"a\n"}).DebugString(), "string[1] {\"a\\n\"}");
  EXPECT_EQ(Tensor::FromVector<int32_t>({1, 2, 3}).DebugString(2), "int32[3] {1, 2, ...}");
  EXPECT_EQ(Tensor::FromVector<bool>({true, false}).DebugString(), "bool[2] {true, false}");
  EXPECT_EQ(Tensor::FromVector<uint8_t>({255}).DebugString(), "uint8[1] {255}");
}

TEST(TensorTest, HalfConversions) {
  EXPECT_EQ(FloatToHalf(0.0f).bits, 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f).bits, 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f).bits, 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f).bits, 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f).bits, 0x7bff);          // max finite
  EXPECT_EQ(FloatToHalf(65520.0f).bits, 0x7c00);          // rounds to inf
  EXPECT_EQ(FloatToHalf(1e10f).bits, 0x7c00);
  EXPECT_EQ(FloatToHalf(0x1p-24f).bits, 0x0001);          // smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f).bits, 0x0000);          // halfway to 0: ties to even
  EXPECT_EQ(FloatToHalf(0x1.8p-25f).bits, 0x0001);        // above halfway rounds up
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f).bits, 0x3c00);   // tie, even stays
  EXPECT_EQ(FloatToHalf(1.0f + 0x3p-11f).bits, 0x3c02);   // tie, odd rounds up
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  // Every finite half survives a round trip through float.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const Half h{static_cast<uint16_t>(bits)};
    const float f = HalfToFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f).bits, h.bits) << bits;
  }
  EXPECT_EQ(HalfToFloat(Half{0x3555}), 0.333251953125f);
}

TEST(TensorTest, HalfTensor) {
  Tensor t = Tensor::FromVector<Half>({FloatToHalf(1.5f), FloatToHalf(-3.0f)});
  EXPECT_EQ(t.dtype(), DType::kFloat16);
  EXPECT_EQ(t.DebugString(), "half[2] {1.5, -3}");
}

TEST(TensorDeathTest, WrongElementTypeAborts) {
  Tensor t = Tensor::Zeros(DType::kFloat32, Shape({1}));
  EXPECT_DEATH(t.data<int64_t>(), "int64 requested from a float tensor");
}

}  // namespace
}  // namespace tensor_test_file
}  // namespace sluice
