// Source positions: a source stream read to a position, then a new stream made there with MakeStreamAt,
// continues with exactly the remaining elements (across files, past error elements).
#include "sluice/ops/file_sources.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/ops/from_vector.h"
#include "sluice/ops/range.h"
#include "sluice/ops/shuffle.h"
#include "sluice/ops/stream.h"
#include "tests/test_util.h"

namespace sluice {

void PrintTo(const SourcePosition& p, std::ostream* os) { *os << "{" << p.index << ", " << p.offset << "}"; }

namespace source_position_test_file {
namespace {

using ops::FromVectorNode;
using ops::ListFilesNode;
using ops::RangeNode;
using ops::RecordFileNode;
using ops::RecordFormat;
using testing_util::Compress;
using testing_util::SharedTFRecord;
using testing_util::TempPath;
using testing_util::WriteFile;
using ::testing::HasSubstr;

IteratorContextPtr Context() { return std::make_shared<IteratorContext>(); }

// The next element of `stream` (waiting when it is pending), or nullopt at its end.
template <class T>
std::optional<absl::StatusOr<T>> Next(Stream<T>& stream) {
  for (int guard = 0; guard < 1'000'000; ++guard) {
    absl::StatusOr<T> out;
    PollState state = stream.Poll(&out);
    if (state == PollState::kReady) return out;
    if (state == PollState::kEnd) return std::nullopt;
    SyncWait(stream.WaitReady());
  }
  ADD_FAILURE() << "stream stayed pending";
  return std::nullopt;
}

// Every element of a stream with the position reported before it; `end` is the position at the end.
template <class T>
struct Walk {
  std::vector<absl::StatusOr<T>> elements;
  std::vector<SourcePosition> before;
  SourcePosition end;
};

template <class T>
Walk<T> WalkAll(Stream<T>& stream) {
  Walk<T> walk;
  for (;;) {
    std::optional<SourcePosition> position = stream.position();
    EXPECT_TRUE(position.has_value());
    std::optional<absl::StatusOr<T>> element = Next(stream);
    if (!element.has_value()) {
      // Reaching the end may move the position (to the end of the file list), never past it.
      std::optional<SourcePosition> end = stream.position();
      EXPECT_TRUE(end.has_value());
      if (end) walk.end = *end;
      return walk;
    }
    walk.before.push_back(position.value_or(SourcePosition{}));
    walk.elements.push_back(std::move(*element));
  }
}

template <class T>
void ExpectSameElements(const std::vector<absl::StatusOr<T>>& got, const std::vector<absl::StatusOr<T>>& want,
                        size_t from) {
  ASSERT_EQ(got.size(), want.size() - from) << "from " << from;
  for (size_t j = 0; j < got.size(); ++j) {
    ASSERT_EQ(got[j].ok(), want[from + j].ok()) << from << "+" << j;
    if (got[j].ok()) {
      EXPECT_EQ(*got[j], *want[from + j]) << from << "+" << j;
    } else {
      EXPECT_EQ(got[j].status(), want[from + j].status()) << from << "+" << j;
    }
  }
}

// Reads a full stream of `node`, then, for every `stride`-th element, a stream made at the position
// reported before it: the rest must be identical, and report the same positions.
template <class T>
Walk<T> CheckResumeEverywhere(const PositionedSource<T>& source, const Node<T>& node, size_t stride = 1) {
  std::unique_ptr<Stream<T>> stream = node.MakeStream(Context());
  Walk<T> full = WalkAll(*stream);
  std::vector<size_t> starts;
  for (size_t k = 0; k < full.elements.size(); k += stride) starts.push_back(k);
  starts.push_back(full.elements.size());  // the end: nothing more
  for (size_t k : starts) {
    const SourcePosition at = k < full.before.size() ? full.before[k] : full.end;
    std::unique_ptr<Stream<T>> resumed = source.MakeStreamAt(Context(), at);
    EXPECT_EQ(resumed->position(), at);
    Walk<T> rest = WalkAll(*resumed);
    ExpectSameElements(rest.elements, full.elements, k);
    for (size_t j = 0; j < rest.before.size(); ++j) EXPECT_EQ(rest.before[j], full.before[k + j]) << k << "+" << j;
    EXPECT_EQ(rest.end, full.end);
  }
  return full;
}

TEST(SourcePositionTest, TFRecordFilesAcrossBoundariesAndACorruptRecord) {
  std::vector<std::string> files = {SharedTFRecord("torchdata_example.tfrecord"),
                                    SharedTFRecord("beam_foo_bar.tfrecord"),
                                    SharedTFRecord("derived/beam_foo_bar_corrupt_data.tfrecord"),
                                    SharedTFRecord("beam_bar_foo.tfrecord")};
  auto node = std::make_shared<RecordFileNode>(files, RecordFormat::kTFRecord, Compression::kNone);
  Walk<std::string> full = CheckResumeEverywhere<std::string>(*node, *node);
  ASSERT_EQ(full.elements.size(), 4u + 2 + 2 + 2);
  // Before the next file is opened a position may be the end of the last one (a restart there reads
  // nothing from it and moves on).
  EXPECT_EQ(full.before[4], (SourcePosition{0, 523}));
  EXPECT_EQ(full.before[5], (SourcePosition{1, 19}));
  // The corrupt record is element 6; the record after it is at {2, 19}.
  EXPECT_EQ(full.elements[6].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(full.before[6], (SourcePosition{1, 38}));
  EXPECT_EQ(full.before[7], (SourcePosition{2, 19}));
  EXPECT_EQ(*full.elements[7], "bar");
  EXPECT_EQ(full.end, (SourcePosition{4, 0}));
}

TEST(SourcePositionTest, GzipFilesResumeInTheDecompressedStream) {
  std::vector<std::string> files = {SharedTFRecord("tfx_penguin/Split-eval/data_tfrecord-00000-of-00001.gz"),
                                    SharedTFRecord("tfx_penguin/Split-train/data_tfrecord-00000-of-00001.gz")};
  auto node = std::make_shared<RecordFileNode>(files, RecordFormat::kTFRecord, Compression::kGzip);
  Walk<std::string> full = CheckResumeEverywhere<std::string>(*node, *node, /*stride=*/13);
  ASSERT_EQ(full.elements.size(), 334u);
  for (const auto& e : full.elements) EXPECT_TRUE(e.ok()) << e.status();
}


TEST(SourcePositionTest, TextLinesAndFixedLengthRecordsAcrossFiles) {
  const std::vector<std::string> texts = {"a\n\nbb\r\nccc", "", "x\ny\n", "z"};
  std::vector<std::string> text_files, fixed_files;
  for (size_t i = 0; i < texts.size(); ++i) {
    text_files.push_back(TempPath(absl::StrCat("position_text_", i, ".txt.gz")));
    WriteFile(text_files.back(), Compress(texts[i], Compression::kGzip));
    // header 3, records of 4, footer 2; the third file has a leftover byte (DataLoss, then the next file).
    std::string bytes = "HHH" + std::string(4 * (i + 1), static_cast<char>('0' + i)) + (i == 2 ? "!" : "") + "FF";
    fixed_files.push_back(TempPath(absl::StrCat("position_fixed_", i, ".bin")));
    WriteFile(fixed_files.back(), bytes);
  }
  auto lines = std::make_shared<RecordFileNode>(text_files, RecordFormat::kTextLines, Compression::kGzip);
  Walk<std::string> text = CheckResumeEverywhere<std::string>(*lines, *lines);
  ASSERT_EQ(text.elements.size(), 4u + 0 + 2 + 1);
  EXPECT_EQ(*text.elements[2], "bb");
  EXPECT_EQ(text.before[3], (SourcePosition{0, 7}));
  EXPECT_EQ(*text.elements[3], "ccc");

  auto fixed = std::make_shared<RecordFileNode>(fixed_files, RecordFormat::kFixedLength, Compression::kNone,
                                                ops::FixedLengthLayout{4, 3, 2});
  Walk<std::string> records = CheckResumeEverywhere<std::string>(*fixed, *fixed);
  ASSERT_EQ(records.elements.size(), 1u + 2 + 3 + 1 + 4);
  EXPECT_EQ(records.elements[6].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(records.before[7], (SourcePosition{3, 0}));  // after the leftover error: the next file
  EXPECT_EQ(records.before[8], (SourcePosition{3, 7}));
  for (const std::string& f : text_files) std::filesystem::remove(f);
  for (const std::string& f : fixed_files) std::filesystem::remove(f);
}

TEST(SourcePositionTest, BadPositionsAreErrorElementsNamingThem) {
  std::vector<std::string> files = {SharedTFRecord("torchdata_example.tfrecord"),
                                    SharedTFRecord("beam_foo.tfrecord")};
  auto node = std::make_shared<RecordFileNode>(files, RecordFormat::kTFRecord, Compression::kNone);
  // A file index past the list: InvalidArgument, the one element.
  Walk<std::string> past = WalkAll(*node->MakeStreamAt(Context(), {3, 0}));
  ASSERT_EQ(past.elements.size(), 1u);
  EXPECT_EQ(past.elements[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(past.elements[0].status().message(), HasSubstr("{3, 0}"));
  // An offset past the first file's end: that file's OutOfRange, then the next file as usual.
  Walk<std::string> beyond = WalkAll(*node->MakeStreamAt(Context(), {0, 100'000}));
  ASSERT_EQ(beyond.elements.size(), 2u);
  EXPECT_EQ(beyond.elements[0].status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(beyond.elements[0].status().message(), HasSubstr(files[0]));
  EXPECT_EQ(*beyond.elements[1], "foo");
  EXPECT_EQ(beyond.before[1], (SourcePosition{1, 0}));
}

TEST(SourcePositionTest, AutoShardPositionsIndexTheShare) {
  std::vector<std::string> files = {SharedTFRecord("beam_foo.tfrecord"), SharedTFRecord("beam_foo_bar.tfrecord"),
                                    SharedTFRecord("beam_foo.tfrecord"), SharedTFRecord("beam_bar_foo.tfrecord")};
  auto node = std::make_shared<RecordFileNode>(files, RecordFormat::kTFRecord, Compression::kNone);
  auto context = std::make_shared<IteratorContext>();
  context->file_shard = {{node.get()}, 2, 1};  // files 1 and 3
  Walk<std::string> full = WalkAll(*node->MakeStream(context));
  ASSERT_EQ(full.elements.size(), 4u);
  EXPECT_EQ(full.before[3], (SourcePosition{1, 19}));
  Walk<std::string> rest = WalkAll(*node->MakeStreamAt(context, full.before[3]));
  ASSERT_EQ(rest.elements.size(), 1u);
  EXPECT_EQ(*rest.elements[0], "foo");  // beam_bar_foo's second record
}

TEST(SourcePositionTest, RangeWithStepsResumesAtEveryIndex) {
  for (auto [start, stop, step] : {std::tuple<int64_t, int64_t, int64_t>{3, 40, 4}, {10, -5, -3}, {0, 0, 1},
                                   {INT64_MAX - 10, INT64_MAX, 4}}) {
    RangeNode node(start, stop, step);
    Walk<int64_t> full = CheckResumeEverywhere<int64_t>(node, node);
    ASSERT_EQ(static_cast<int64_t>(full.elements.size()), node.cardinality());
    for (size_t k = 0; k < full.elements.size(); ++k) {
      EXPECT_EQ(*full.elements[k], start + static_cast<int64_t>(k) * step);
      EXPECT_EQ(full.before[k], (SourcePosition{static_cast<int64_t>(k), 0}));
    }
    EXPECT_EQ(full.end, (SourcePosition{node.cardinality(), 0}));
  }
  RangeNode node(0, 10, 3);
  for (SourcePosition bad : {SourcePosition{5, 0}, SourcePosition{-1, 0}, SourcePosition{1, 1}}) {
    Walk<int64_t> got = WalkAll(*node.MakeStreamAt(Context(), bad));
    ASSERT_EQ(got.elements.size(), 1u);
    EXPECT_EQ(got.elements[0].status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.elements[0].status().message(), HasSubstr("Range"));
  }
}

// Counts that overflow int64 arithmetic: exact where they fit, INT64_MAX where they do not (UBSan checks
// that nothing overflows on the way).
TEST(SourcePositionTest, RangeCardinalityOfWideRanges) {
  EXPECT_EQ(RangeNode(0, INT64_MAX, 1).cardinality(), INT64_MAX);
  EXPECT_EQ(RangeNode(0, INT64_MAX, 2).cardinality(), INT64_MAX / 2 + 1);
  EXPECT_EQ(RangeNode(INT64_MIN, INT64_MAX, 1).cardinality(), INT64_MAX);
  EXPECT_EQ(RangeNode(INT64_MIN, INT64_MAX, INT64_MAX).cardinality(), 3);  // MIN, -1, MAX - 1
  EXPECT_EQ(RangeNode(INT64_MAX, INT64_MIN, INT64_MIN).cardinality(), 2);  // MAX, -1
  EXPECT_EQ(RangeNode(INT64_MAX, INT64_MIN, -1).cardinality(), INT64_MAX);
  EXPECT_EQ(RangeNode(5, 5, 1).cardinality(), 0);
  EXPECT_EQ(RangeNode(5, 6, -1).cardinality(), 0);
  EXPECT_EQ(RangeNode(10, -5, -3).cardinality(), 5);  // 10, 7, 4, 1, -2
}

TEST(SourcePositionTest, FromVectorResumesAtEveryIndex) {
  auto values = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"a", "b", "c", "d"});
  FromVectorNode<std::string> node(values);
  Walk<std::string> full = CheckResumeEverywhere<std::string>(node, node);
  ASSERT_EQ(full.elements.size(), 4u);
  EXPECT_EQ(full.end, (SourcePosition{4, 0}));
  Walk<std::string> got = WalkAll(*node.MakeStreamAt(Context(), {5, 0}));
  ASSERT_EQ(got.elements.size(), 1u);
  EXPECT_EQ(got.elements[0].status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SourcePositionTest, ListFilesKeepsShuffleOrdersAndResumesAPass) {
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back(absl::StrCat("/data/shard-", i));
  // The orders are the ones Shuffle with a buffer of all names gives, pass after pass of one iterator
  // (one context: pass numbers are the iterator's).
  ListFilesNode list(names, /*shuffle=*/true, /*seed=*/42);
  ops::ShuffleNode<std::string> shuffle(
      std::make_shared<FromVectorNode<std::string>>(std::make_shared<const std::vector<std::string>>(names)), 20,
      42, true);
  IteratorContextPtr list_iterator = Context();
  IteratorContextPtr shuffle_iterator = Context();
  std::vector<Walk<std::string>> passes;
  for (int pass = 0; pass < 2; ++pass) {
    Walk<std::string> got = WalkAll(*list.MakeStream(list_iterator));
    std::unique_ptr<Stream<std::string>> reference = shuffle.MakeStream(shuffle_iterator);
    std::vector<absl::StatusOr<std::string>> want;
    while (std::optional<absl::StatusOr<std::string>> e = Next(*reference)) want.push_back(std::move(*e));
    ExpectSameElements(got.elements, want, 0);
    EXPECT_EQ(got.before[3], (SourcePosition{3, static_cast<uint64_t>(pass)}));
    passes.push_back(std::move(got));
  }
  std::vector<std::string> order0, order1;
  for (const auto& e : passes[0].elements) order0.push_back(*e);
  for (const auto& e : passes[1].elements) order1.push_back(*e);
  EXPECT_NE(order0, order1);  // a new order per pass
  // Resuming pass 0 gives the rest of that order, in another iterator too (the seed is the definition's).
  Walk<std::string> rest = WalkAll(*list.MakeStreamAt(Context(), passes[0].before[7]));
  ExpectSameElements(rest.elements, passes[0].elements, 7);
  // The resuming iterator's next new pass is the one after the resumed pass.
  ListFilesNode other(names, true, 42);
  IteratorContextPtr resuming = Context();
  Walk<std::string> resumed = WalkAll(*other.MakeStreamAt(resuming, passes[1].before[5]));
  ExpectSameElements(resumed.elements, passes[1].elements, 5);
  EXPECT_EQ(WalkAll(*other.MakeStream(resuming)).before[0], (SourcePosition{0, 2}));
  // A fresh iterator starts at pass 0 whatever other iterators did.
  EXPECT_EQ(WalkAll(*other.MakeStream(Context())).before[0], (SourcePosition{0, 0}));
  // Without a shuffle: the sorted names, positions {index, 0}.
  ListFilesNode sorted(names, false, std::nullopt);
  Walk<std::string> plain = CheckResumeEverywhere<std::string>(sorted, sorted);
  ASSERT_EQ(plain.elements.size(), 20u);
  EXPECT_EQ(*plain.elements[3], names[3]);
  EXPECT_EQ(WalkAll(*sorted.MakeStreamAt(Context(), {2, 1})).elements[0].status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace source_position_test_file
}  // namespace sluice
