#include "sluice/ops/bucket_by_sequence_length.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "tests/ops/test_helpers.h"

namespace sluice {
namespace bucket_by_sequence_length_test_file {
namespace {

using test_ops::Collect;
using test_ops::Fill;
using test_ops::Ints;
using test_ops::Values;

int64_t Length(const Tensor& t) { return t.shape().dim(0); }

Dataset<Tensor> Sequences(std::vector<int64_t> lengths) { return FromVector(std::move(lengths)).Map(Fill); }

TEST(BucketBySequenceLengthTest, BatchesWhenABucketFillsThenFlushesInBucketOrder) {
  auto ds = Sequences({1, 5, 2, 6, 3, 7, 4, 8}).BucketBySequenceLength(Length, {4}, {2, 3});
  auto got = Values(ds);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].shape(), Shape({2, 2}));
  EXPECT_EQ(Ints(got[0]), (std::vector<int64_t>{1, 0, 2, 2}));
  EXPECT_EQ(got[1].shape(), Shape({3, 7}));
  EXPECT_EQ(Ints(got[1]).front(), 5);
  EXPECT_EQ(got[2].shape(), Shape({1, 3}));  // bucket 0's remainder first
  EXPECT_EQ(Ints(got[2]), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(got[3].shape(), Shape({2, 8}));  // then bucket 1's
  EXPECT_EQ(Ints(got[3])[0], 4);
  EXPECT_EQ(Ints(got[3])[4], 0);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(BucketBySequenceLengthTest, DropRemainderKeepsOnlyFullBatches) {
  auto got = Values(Sequences({1, 5, 2, 6, 3, 7, 4, 8})
                        .BucketBySequenceLength(Length, {4}, {2, 3}, {}, {}, false, false, /*drop_remainder=*/true));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].shape(), Shape({2, 2}));
  EXPECT_EQ(got[1].shape(), Shape({3, 7}));
}

TEST(BucketBySequenceLengthTest, BoundariesAreLowerInclusive) {
  // Buckets [-inf, 3), [3, 6), [6, inf): length 3 goes to bucket 1, 6 to bucket 2.
  auto got = Values(Sequences({3, 6, 2, 5, 9}).BucketBySequenceLength(Length, {3, 6}, {2, 2, 2}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].shape(), Shape({2, 5}));  // 3 and 5 fill bucket 1 first
  EXPECT_EQ(Ints(got[0])[0], 3);
  EXPECT_EQ(got[1].shape(), Shape({2, 9}));  // 6 and 9 fill bucket 2
  EXPECT_EQ(got[2].shape(), Shape({1, 2}));  // 2 flushed from bucket 0
}

TEST(BucketBySequenceLengthTest, PadToBucketBoundaryAndPaddingValues) {
  auto got = Values(Sequences({1, 2, 4, 5}).BucketBySequenceLength(Length, {3, 9}, {2, 2, 2}, {},
                                                                   {Tensor::Scalar<int64_t>(-1)},
                                                                   /*pad_to_bucket_boundary=*/true));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].shape(), Shape({2, 2}));  // boundary 3 - 1
  EXPECT_EQ(Ints(got[0]), (std::vector<int64_t>{1, -1, 2, 2}));
  EXPECT_EQ(got[1].shape(), Shape({2, 8}));  // boundary 9 - 1
  EXPECT_EQ(Ints(got[1])[4], -1);
  auto explicit_shape = Values(Sequences({1, 2}).BucketBySequenceLength(Length, {3}, {2, 2}, {{-1}}, {}, true));
  ASSERT_EQ(explicit_shape.size(), 1u);
  EXPECT_EQ(explicit_shape[0].shape(), Shape({2, 2}));
  auto fixed = Values(Sequences({1, 2}).BucketBySequenceLength(Length, {3}, {2, 2}, {{6}}));
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].shape(), Shape({2, 6}));
  // The last bucket has no boundary to pad to: an error, as tf.data.
  auto last = Collect(Sequences({1, 12, 2}).BucketBySequenceLength(Length, {3, 9}, {2, 2, 2}, {}, {}, true));
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(last[0].status().message().find("When pad_to_bucket_boundary=True, elements must have length < "
                                            "bucket_boundaries[-1]."),
            std::string::npos)
      << last[0].status();
  EXPECT_EQ(last[1]->shape(), Shape({2, 2}));
}

TEST(BucketBySequenceLengthTest, NoPaddingBatchesOtherTypes) {
  auto words = FromVector<std::string>({"a", "bbbb", "cc", "ddddd", "e"});
  auto got = Values(words.BucketBySequenceLength([](const std::string& s) { return s.size(); }, {3}, {2, 2}, {}, {},
                                                 false, /*no_padding=*/true));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], (std::vector<std::string>{"a", "cc"}));
  EXPECT_EQ(got[1], (std::vector<std::string>{"bbbb", "ddddd"}));
  EXPECT_EQ(got[2], (std::vector<std::string>{"e"}));
  // no_padding over tensors: a plain Batch, so different lengths in one bucket cannot stack.
  auto unpadded = Collect(Sequences({1, 2}).BucketBySequenceLength(Length, {5}, {2, 2}, {}, {}, false, true));
  ASSERT_EQ(unpadded.size(), 1u);
  EXPECT_EQ(unpadded[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unpadded[0].status().message().find("Cannot batch tensors with different shapes"), std::string::npos);
  auto padded_strings = Collect(words.BucketBySequenceLength([](const std::string& s) { return s.size(); }, {3},
                                                             {2, 2}));
  ASSERT_EQ(padded_strings.size(), 1u);
  EXPECT_EQ(padded_strings[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BucketBySequenceLengthTest, ArgumentAndElementErrors) {
  for (const Dataset<Tensor>& ds : {Sequences({1}).BucketBySequenceLength(Length, {3}, {2}),
                                    Sequences({1}).BucketBySequenceLength(Length, {3}, {2, 0}),
                                    Sequences({1}).BucketBySequenceLength(Length, {3}, {2, 2}, {{1}, {2}})}) {
    auto got = Collect(ds);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status().code(), absl::StatusCode::kInvalidArgument) << got[0].status();
  }
  auto mismatch = Collect(Sequences({1}).BucketBySequenceLength(Length, {3}, {2}));
  EXPECT_NE(mismatch[0].status().message().find("len(bucket_batch_sizes) must equal len(bucket_boundaries) + 1"),
            std::string::npos);
  auto throwing = [](const Tensor& t) -> int64_t {
    if (t.shape().dim(0) == 2) throw std::runtime_error("no length for you");
    return t.shape().dim(0);
  };
  auto got = Collect(Sequences({1, 2, 3}).BucketBySequenceLength(throwing, {5}, {2, 2}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].status().message().find("BucketBySequenceLength (element 1)"), std::string::npos)
      << got[0].status();
  EXPECT_NE(got[0].status().message().find("no length for you"), std::string::npos);
  EXPECT_EQ(got[1]->shape(), Shape({2, 3}));
  auto huge = Collect(Sequences({1}).BucketBySequenceLength([](const Tensor&) { return int64_t{1} << 40; }, {5},
                                                            {2, 2}));
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_EQ(huge[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BucketBySequenceLengthTest, DestroyedMidStreamWithWorkInFlight) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 300; ++i) lengths.push_back(1 + (i * 7) % 13);
  for (int round = 0; round < 10; ++round) {
    Iterator<Tensor> it =
        Sequences(lengths).Prefetch(3).BucketBySequenceLength(Length, {4, 8}, {3, 3, 3}).Prefetch(2).MakeIterator();
    for (int i = 0; i < round % 4; ++i) ASSERT_TRUE(it.NextBlocking().ok());
  }
  int64_t total = 0;
  for (const Tensor& batch : Values(Sequences(lengths).BucketBySequenceLength(Length, {4, 8}, {3, 3, 3}))) {
    total += batch.shape().dim(0);
  }
  EXPECT_EQ(total, 300);
}

}  // namespace
}  // namespace bucket_by_sequence_length_test_file
}  // namespace sluice
