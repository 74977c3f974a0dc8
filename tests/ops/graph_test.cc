// Portable pipelines: every op's definition survives Serialize -> Deserialize with the same DebugString,
// element type, canonical bytes and elements; what cannot cross a process boundary fails by name; hostile
// bytes are errors.
#include "sluice/ops/graph.h"

#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/proto_wire.h"
#include "sluice/io/example.h"
#include "sluice/ops/registration.h"
#include "tests/ops/test_helpers.h"
#include "tests/test_util.h"

namespace graph_test {

inline constexpr sluice::Function<int64_t(int64_t)> kAddN{"graph_test.add_n"};
inline constexpr sluice::Function<bool(const int64_t&)> kIsMultiple{"graph_test.is_multiple"};
inline constexpr sluice::Function<sluice::Dataset<int64_t>(int64_t)> kRangeTo{"graph_test.range_to"};
inline constexpr sluice::Function<sluice::Dataset<int64_t>()> kSquares{"graph_test.squares"};
inline constexpr sluice::Function<int64_t(int64_t)> kUnregistered{"graph_test.nobody_registered_me"};
inline constexpr sluice::Function<std::pair<int64_t, int64_t>(const int64_t&, int64_t)> kRunningSum{
    "graph_test.running_sum"};
inline constexpr sluice::Function<int64_t(const sluice::Tensor&)> kLength{"graph_test.length"};

SLUICE_REGISTER_FUNCTION(kRunningSum, [](const sluice::FunctionArgs&) {
  return [](const int64_t& sum, int64_t x) { return std::pair<int64_t, int64_t>(sum + x, sum + x); };
});
SLUICE_REGISTER_FUNCTION(kLength, [](const sluice::FunctionArgs&) {
  return [](const sluice::Tensor& t) { return t.shape().dim(0); };
});

SLUICE_REGISTER_FUNCTION(kAddN, [](const sluice::FunctionArgs& args) -> absl::StatusOr<std::function<int64_t(int64_t)>> {
  absl::StatusOr<int64_t> n = args.Get<int64_t>("n");
  if (!n.ok()) return n.status();
  return [n = *n](int64_t x) { return x + n; };
});
SLUICE_REGISTER_FUNCTION(kIsMultiple, [](const sluice::FunctionArgs& args) {
  const int64_t of = args.GetOr<int64_t>("of", 2).value_or(2);
  return [of](const int64_t& x) { return x % of == 0; };
});
SLUICE_REGISTER_FUNCTION(kRangeTo, [](const sluice::FunctionArgs&) {
  return [](int64_t x) { return sluice::Range(x); };
});
SLUICE_REGISTER_DATASET(kSquares, [](const sluice::FunctionArgs& args) -> absl::StatusOr<sluice::Dataset<int64_t>> {
  absl::StatusOr<int64_t> count = args.Get<int64_t>("count");
  if (!count.ok()) return count.status();
  std::vector<int64_t> squares;
  for (int64_t i = 0; i < *count; ++i) squares.push_back(i * i);
  return sluice::FromVector(std::move(squares));
});

}  // namespace graph_test

namespace sluice {
namespace graph_test_file {
namespace {

using graph_test::kAddN;
using graph_test::kIsMultiple;
using graph_test::kRangeTo;
using graph_test::kSquares;
using test_ops::Collect;

template <class T>
std::string Show(const absl::StatusOr<T>& element) {
  // One named result and no move on return: GCC 12 warns (-Warray-bounds, falsely) on moving `bytes` out.
  std::string shown;
  if (element.ok()) {
    EncodeElement(*element, &shown);
  } else {
    shown = element.status().ToString();
  }
  return shown;
}

// The round trip every op must survive.
template <class T>
void ExpectRoundTrip(const Dataset<T>& ds) {
  absl::StatusOr<std::string> bytes = Serialize(ds);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<AnyDataset> any = Deserialize(*bytes);
  ASSERT_TRUE(any.ok()) << any.status() << "\n" << ds.DebugString();
  EXPECT_EQ(any->DebugString(), ds.DebugString());
  EXPECT_EQ(any->element_type_name(), ElementTypeName<T>());
  absl::StatusOr<Dataset<T>> typed = any->As<T>();
  ASSERT_TRUE(typed.ok()) << typed.status();
  absl::StatusOr<std::string> again = Serialize(*typed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *bytes) << "canonical bytes differ after a round trip";
  auto want = Collect(ds, 5000);
  auto got = Collect(*typed, 5000);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(Show(got[i]), Show(want[i])) << "element " << i;
}

Tensor Row(int64_t n) {
  std::vector<int64_t> values(static_cast<size_t>(n), n);
  return Tensor::FromVector<int64_t>(values);
}

ParseSpec ExampleSpec() {
  ParseSpec spec;
  spec.fixed.push_back({"label", DType::kInt64, Shape({}), std::nullopt});
  spec.fixed.push_back({"name", DType::kString, Shape({}), Tensor::Scalar<std::string>("none")});
  spec.var.push_back({"scores", DType::kFloat32});
  return spec;
}

std::vector<std::string> Examples(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    ExampleBuilder b;
    b.AddInt64s("label", {i});
    if (i % 2 == 0) b.AddBytes("name", {"even"});
    std::vector<float> scores(static_cast<size_t>(i % 3), 0.25f * static_cast<float>(i));
    b.AddFloats("scores", std::span<const float>(scores));
    out.push_back(b.Serialize());
  }
  return out;
}

std::string SharedFile() { return testing_util::SharedTFRecord("tfx_external_tfrecord/data_tfrecord-00000-of-00002.gz"); }

struct OpCase {
  std::string name;
  std::function<void()> check;
};

std::vector<OpCase> OpCases() {
  const Dataset<int64_t> ints = Range(3, 40, 2);
  const Dataset<Tensor> rows = FromVector<Tensor>({Row(1), Row(3), Row(2), Row(4), Row(1)});
  return {
      {"Range", [=] { ExpectRoundTrip(ints); }},
      {"FromVectorInts",
       [] {
         ExpectRoundTrip(FromVector<int64_t>({5, -1, 1LL << 40}));
       }},
      {"FromVectorStrings",
       [] {
         ExpectRoundTrip(FromVector<std::string>({"a", "", std::string("\0b", 2)}));
       }},
      {"FromVectorTensors", [=] { ExpectRoundTrip(rows); }},
      {"FromTensors", [=] { ExpectRoundTrip(FromTensors(Row(3))); }},
      {"FromTensorSlices", [=] { ExpectRoundTrip(FromTensorSlices(Row(4))); }},
      {"FromTensorSlicesPair",
       [=] {
         ExpectRoundTrip(
             FromTensorSlices(std::make_pair(Row(3), Tensor::FromVector<std::string>({"a", "b", "c"}))));
       }},
      {"Take", [=] { ExpectRoundTrip(ints.Take(4)); }},
      {"Skip", [=] { ExpectRoundTrip(ints.Skip(3)); }},
      {"Repeat", [=] { ExpectRoundTrip(ints.Repeat(3)); }},
      {"ShuffleSeeded", [=] { ExpectRoundTrip(ints.Shuffle(7, 42).Repeat(2)); }},
      {"ShuffleNoReshuffle", [=] { ExpectRoundTrip(ints.Shuffle(5, 9, false).Repeat(2)); }},
      {"Prefetch", [=] { ExpectRoundTrip(ints.Prefetch(3)); }},
      {"PrefetchAutotune", [=] { ExpectRoundTrip(ints.Prefetch(kAutotune)); }},
      {"Shard", [=] { ExpectRoundTrip(ints.Shard(3, 1)); }},
      {"CacheInMemory", [=] { ExpectRoundTrip(ints.Cache().Repeat(2)); }},
      {"CacheInFile", [=] { ExpectRoundTrip(ints.Cache(testing_util::TempPath("graph_cache"))); }},
      {"Concatenate", [=] { ExpectRoundTrip(ints.Concatenate(Range(5))); }},
      {"IgnoreErrors", [=] { ExpectRoundTrip(ints.Batch(0).Unbatch().IgnoreErrors()); }},
      {"Enumerate", [=] { ExpectRoundTrip(ints.Enumerate(10)); }},
      {"BatchNumbers", [=] { ExpectRoundTrip(ints.Batch(4, true)); }},
      {"BatchVectors", [=] { ExpectRoundTrip(ints.BatchVectors(3)); }},
      {"BatchParallel", [=] { ExpectRoundTrip(rows.Batch(2, false, 2, true)); }},
      {"BatchError", [=] { ExpectRoundTrip(ints.Batch(0)); }},
      {"Unbatch", [=] { ExpectRoundTrip(ints.Batch(3).Unbatch()); }},
      {"Rebatch",
       [=] {
         ExpectRoundTrip(FromVector<Tensor>({Row(2), Row(2), Row(2)}).Batch(2).Rebatch({1, 2}));
       }},
      {"PaddedBatch", [=] { ExpectRoundTrip(rows.PaddedBatch(2, {{5}}, {Tensor::Scalar<int64_t>(-1)})); }},
      {"SampleFromDatasets",
       [=] {
         ExpectRoundTrip(SampleFromDatasets<int64_t>({ints, Range(100, 110)}, {0.3, 0.7}, 5));
       }},
      {"SampleRerandomized",
       [=] {
         ExpectRoundTrip(SampleFromDatasets<int64_t>({ints, Range(100, 110)}, {0.3, 0.7}, 5, false, true));
       }},
      {"ChooseFromDatasets",
       [=] {
         ExpectRoundTrip(
             ChooseFromDatasets<int64_t>({ints, Range(100, 110)}, FromVector<int64_t>({1, 0, 1, 1})));
       }},
      {"Zip", [=] { ExpectRoundTrip(Zip(ints, Range(100))); }},
      {"ZipTensors", [=] { ExpectRoundTrip(Zip(rows, rows.Skip(1))); }},
      {"TFRecordGzip", [] { ExpectRoundTrip(TFRecord({SharedFile()}, Compression::kGzip)); }},
      {"TextLines",
       [] {
         const std::string path = testing_util::TempPath("graph_lines.txt");
         testing_util::WriteFile(path, "one\ntwo\r\nthree");
         ExpectRoundTrip(TextLines({path}));
       }},
      {"FixedLengthRecords",
       [] {
         const std::string path = testing_util::TempPath("graph_fixed.bin");
         testing_util::WriteFile(path, "HHabcdefghFF");
         ExpectRoundTrip(FixedLengthRecords({path}, 4, 2, 2));
       }},
      {"TFRecordReadModeAndCommaPath",
       [] {
         const std::string path = testing_util::TempPath("graph,with,commas.tfrecord");
         std::ifstream in(testing_util::SharedTFRecord("beam_foo.tfrecord"), std::ios::binary);
         testing_util::WriteFile(path, std::string(std::istreambuf_iterator<char>(in), {}));
         ExpectRoundTrip(TFRecord({path, path}, Compression::kNone, ReadMode::kMmap));
         ExpectRoundTrip(TFRecord({path}, Compression::kNone, ReadMode::kRead));
       }},
      {"ListFiles",
       [] { ExpectRoundTrip(ListFiles({testing_util::SharedTFRecord("*.tfrecord")}, true, 3)); }},
      {"ParseExample", [] { ExpectRoundTrip(FromVector(Examples(6)).ParseExample(ExampleSpec())); }},
      {"ParseExampleBatched",
       [] { ExpectRoundTrip(FromVector(Examples(6)).Batch(4).ParseExample(ExampleSpec())); }},
      {"MapRegistered",
       [=] {
         ExpectRoundTrip(ints.Map(kAddN.With({{"n", 7}})));
       }},  // an int literal is int64
      {"MapParallelRegistered",
       [=] {
         ExpectRoundTrip(ints.Map(kAddN.With({{"n", int64_t{-2}}}), 2));
       }},
      {"FilterRegistered",
       [=] {
         ExpectRoundTrip(ints.Filter(kIsMultiple.With({{"of", int64_t{3}}})));
       }},
      {"TakeWhileRegistered",
       [=] {
         ExpectRoundTrip(ints.TakeWhile(kIsMultiple.With({{"of", int64_t{1}}})));
       }},
      {"FlatMapRegistered", [] { ExpectRoundTrip(Range(5).FlatMap(kRangeTo)); }},
      {"InterleaveRegistered", [] { ExpectRoundTrip(Range(6).Interleave(kRangeTo, 3, 2)); }},
      {"InterleaveParallelRegistered", [] { ExpectRoundTrip(Range(6).Interleave(kRangeTo, 3, 1, 2, true)); }},
      {"ScanRegistered", [=] { ExpectRoundTrip(ints.Scan(int64_t{100}, graph_test::kRunningSum)); }},
      {"BucketBySequenceLengthRegistered",
       [=] {
         ExpectRoundTrip(rows.BucketBySequenceLength(graph_test::kLength, {3}, {2, 2}, {{-1}}, {}));
       }},
      {"RegisteredDataset",
       [] {
         ExpectRoundTrip(RegisteredDataset(kSquares.With({{"count", int64_t{9}}})).Skip(2));
       }},
  };
}

class GraphRoundTripTest : public ::testing::TestWithParam<size_t> {};

TEST_P(GraphRoundTripTest, SameDebugStringTypeBytesAndElements) {
  const OpCase c = OpCases()[GetParam()];
  SCOPED_TRACE(c.name);
  c.check();
}

INSTANTIATE_TEST_SUITE_P(EveryOp, GraphRoundTripTest, ::testing::Range<size_t>(0, OpCases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return OpCases()[info.param].name; });

TEST(GraphTest, LambdaFailsNamingOpPathAndLabel) {
  auto ds = Range(10).Map([](int64_t x) { return x; }, "my_label").Take(3).Batch(2);
  absl::StatusOr<std::string> bytes = Serialize(ds);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(bytes.status().message().find("Map at /0/0"), std::string::npos) << bytes.status();
  EXPECT_NE(bytes.status().message().find("my_label"), std::string::npos) << bytes.status();
}

TEST(GraphTest, LabelEqualToARegisteredNameIsStillALambda) {
  auto ds = Range(10).Map([](int64_t x) { return x; }, "graph_test.add_n");
  EXPECT_EQ(Serialize(ds).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(GraphTest, UnregisteredOrMistypedFunctionIsTheErrorElement) {
  auto missing = Collect(Range(3).Map(graph_test::kUnregistered));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing[0].status().message().find("not registered"), std::string::npos) << missing[0].status();
  auto bad_args = Collect(Range(3).Map(kAddN.With({{"n", "seven"}})));
  ASSERT_EQ(bad_args.size(), 1u);
  EXPECT_NE(bad_args[0].status().message().find("graph_test.add_n"), std::string::npos) << bad_args[0].status();
}

TEST(GraphTest, ElementTypeMismatchNamesBothTypes) {
  absl::StatusOr<std::string> bytes = Serialize(FromVector<Tensor>({Row(2)}));
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<Dataset<ParsedExample>> wrong = BuildTyped<ParsedExample>(*bytes);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "graph yields Tensor, caller expects ParsedExample");
}

TEST(GraphTest, AMissingTypeRegistrationIsNamed) {
  // double has a name and a codec but no op builders until a program registers it.
  absl::StatusOr<std::string> bytes = Serialize(FromVector<double>({1.5, 2.5}).Take(1));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::Status status = Deserialize(*bytes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("FromVector at /0: no builder for FromVector yielding double; register element "
                                  "type double with SLUICE_REGISTER_ELEMENT_TYPE"),
            std::string::npos)
      << status;
}

TEST(GraphTest, UnnamedElementTypeAndErrorCounterCannotCross) {
  struct Local {
    int x = 0;
  };
  auto unnamed = Range(3).Map([](int64_t x) { return Local{static_cast<int>(x)}; });
  EXPECT_EQ(Serialize(unnamed).status().code(), absl::StatusCode::kFailedPrecondition);
  auto counted = Range(3).IgnoreErrors(false, std::make_shared<ErrorCounter>());
  absl::Status status = Serialize(counted).status();
  EXPECT_NE(status.message().find("IgnoreErrors at /"), std::string::npos) << status;
}

TEST(GraphTest, FingerprintIsFixedAndFollowsEveryParam) {
  auto fingerprint = [](const auto& ds) {
    absl::StatusOr<GraphNode> graph = DescribeGraph(*ds.node());
    EXPECT_TRUE(graph.ok()) << graph.status();
    return Fingerprint(*graph);
  };
  const uint64_t base = fingerprint(Range(0, 10, 1).Shuffle(4, 1).Batch(2));
  EXPECT_EQ(base, fingerprint(Range(0, 10, 1).Shuffle(4, 1).Batch(2)));
  EXPECT_NE(base, fingerprint(Range(0, 11, 1).Shuffle(4, 1).Batch(2)));
  EXPECT_NE(base, fingerprint(Range(0, 10, 1).Shuffle(5, 1).Batch(2)));
  EXPECT_NE(base, fingerprint(Range(0, 10, 1).Shuffle(4, 2).Batch(2)));
  EXPECT_NE(base, fingerprint(Range(0, 10, 1).Shuffle(4, 1, false).Batch(2)));
  EXPECT_NE(base, fingerprint(Range(0, 10, 1).Shuffle(4, 1).Batch(2, true)));
  EXPECT_NE(fingerprint(Range(5).Map(kAddN.With({{"n", int64_t{1}}}))),
            fingerprint(Range(5).Map(kAddN.With({{"n", int64_t{2}}}))));
}

TEST(GraphTest, HostileBytesAreErrorsNeverCrashes) {
  absl::StatusOr<std::string> bytes =
      Serialize(Range(10).Map(kAddN.With({{"n", int64_t{1}}})).Shuffle(3, 1).Batch(2).Unbatch().Take(5));
  ASSERT_TRUE(bytes.ok());
  for (size_t cut = 0; cut < bytes->size(); ++cut) {
    absl::StatusOr<AnyDataset> built = Deserialize(bytes->substr(0, cut));
    EXPECT_FALSE(built.ok()) << "a graph cut at " << cut << " of " << bytes->size() << " bytes was accepted";
    if (!built.ok()) {
      const absl::StatusCode code = built.status().code();
      EXPECT_TRUE(code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kInvalidArgument ||
                  code == absl::StatusCode::kFailedPrecondition)
          << built.status();
    }
  }
  for (size_t i = 0; i < bytes->size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = *bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      (void)Deserialize(flipped);  // any result but a crash or a huge allocation (ASan would say)
    }
  }
  EXPECT_EQ(Deserialize("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GraphTest, DeepNestingIsRefused) {
  // Nodes nested far deeper than kMaxGraphDepth, built by hand: no stack overflow, InvalidArgument.
  auto length_delimited = [](uint32_t field, const std::string& payload) {
    std::string out;
    wire::AppendBytesField(&out, field, payload);
    return out;
  };
  std::string node = length_delimited(1, "Range");
  for (int i = 0; i < 5000; ++i) node = length_delimited(1, "Take") + length_delimited(5, node);
  GraphNode root;
  root.op = "Range";
  std::string valid = EncodeGraph(root);
  std::string header = valid.substr(0, valid.find('\x1a'));
  absl::StatusOr<GraphNode> parsed = ParseGraph(header + length_delimited(3, node));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
}

TEST(GraphTest, GraphTextShowsPathsOpsTypesAndParams) {
  absl::StatusOr<GraphNode> graph = DescribeGraph(*Range(4).Map(kAddN.With({{"n", int64_t{3}}})).Batch(2).node());
  ASSERT_TRUE(graph.ok());
  const std::string text = GraphText(*graph);
  EXPECT_NE(text.find("/  "), std::string::npos) << text;
  EXPECT_NE(text.find("Batch -> Tensor"), std::string::npos) << text;
  EXPECT_NE(text.find("/0 "), std::string::npos) << text;
  EXPECT_NE(text.find("f=graph_test.add_n(n=3)"), std::string::npos) << text;
  EXPECT_NE(text.find("/0/0"), std::string::npos) << text;
}

}  // namespace
}  // namespace graph_test_file
}  // namespace sluice
