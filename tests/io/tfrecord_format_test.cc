#include "io/tfrecord_format.h"

#include "io/memory_limit.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "io/tfrecord_writer.h"

namespace sluice::io {
namespace tfrecord_format_test_file {
namespace {

using ::testing::HasSubstr;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kFuzzScale = 4;
#else
constexpr int kFuzzScale = 1;
#endif

struct ParseResult {
  std::vector<TFRecord> records;
  std::vector<absl::Status> errors;  // errors seen; parsing continues after a data CRC error
  absl::Status finish;
  int zero_copy = 0;
};

// Feeds `bytes` in chunks of `chunk` and collects everything. After an error it calls Next() again, as a
// consumer skipping bad records would, until the parser returns the same (sticky) error twice.
ParseResult ParseAll(const std::string& bytes, size_t chunk, TFRecordParserOptions options = {},
                     Compression compression = Compression::kNone) {
  ParseResult result;
  TFRecordDecoder decoder(compression, std::move(options));
  size_t pos = 0;
  // Each round trip either consumes bytes, returns a record (at most bytes/16 of them) or an error;
  // the bound only protects the test from a parser bug.
  int budget = static_cast<int>(bytes.size()) * 4 + 1000;
  do {
    const size_t n = std::min(chunk, bytes.size() - pos);
    const std::span<const std::byte> piece = AsBytes(bytes).subspan(pos, n);
    decoder.Feed(piece);
    pos += n;
    while (--budget > 0) {
      absl::StatusOr<std::optional<TFRecordView>> r = decoder.Next();
      if (!r.ok()) {
        if (!result.errors.empty() && result.errors.back() == r.status()) {
          result.finish = r.status();
          return result;
        }
        result.errors.push_back(r.status());
        continue;
      }
      if (!r->has_value()) break;
      const TFRecordView& view = **r;
      if (compression == Compression::kNone && view.data.size() > 0 && view.data.data() >= piece.data() &&
          view.data.data() + view.data.size() <= piece.data() + piece.size()) {
        ++result.zero_copy;
      }
      result.records.push_back(view.ToOwned());
    }
    if (budget <= 0) {
      ADD_FAILURE() << "parser did not make progress";
      return result;
    }
  } while (pos < bytes.size());
  result.finish = decoder.Finish();
  return result;
}

TFRecordParserOptions Named(std::string name) {
  TFRecordParserOptions options;
  options.file_name = std::move(name);
  return options;
}

std::vector<std::string> SampleRecords() {
  std::vector<std::string> records = {"foo", "", "bar", std::string(5000, 'x'), "a"};
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    std::string r(rng() % 300, '\0');
    for (auto& c : r) c = static_cast<char>(rng());
    records.push_back(r);
  }
  return records;
}

std::string Encode(const std::vector<std::string>& records) {
  std::string out;
  for (const auto& r : records) AppendTFRecord(absl::string_view(r), &out);
  return out;
}

TEST(TFRecordFormatTest, EncodesLikeTensorFlow) {
  // beam_foo.tfrecord, written by tf.python_io.TFRecordWriter (see shared data).
  const unsigned char expected[] = {3, 0, 0, 0, 0, 0, 0, 0, 0xb0, 0x99, 0x49, 0x0e,
                                    'f', 'o', 'o', 0x61, 0x8a, 0xbe, 0xfe};
  std::string out;
  AppendTFRecord(absl::string_view("foo"), &out);
  ASSERT_EQ(out.size(), sizeof(expected));
  EXPECT_EQ(std::memcmp(out.data(), expected, sizeof(expected)), 0);
}

TEST(TFRecordFormatTest, ParsesInEveryChunkSize) {
  const std::vector<std::string> records = SampleRecords();
  const std::string bytes = Encode(records);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{7}, size_t{11}, size_t{12}, size_t{13}, size_t{16},
                       size_t{19}, size_t{4096}, bytes.size()}) {
    ParseResult r = ParseAll(bytes, chunk);
    ASSERT_TRUE(r.errors.empty()) << r.errors[0];
    ASSERT_TRUE(r.finish.ok()) << r.finish;
    ASSERT_EQ(r.records.size(), records.size()) << "chunk " << chunk;
    uint64_t offset = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(r.records[i].data, records[i]) << "chunk " << chunk << " record " << i;
      EXPECT_EQ(r.records[i].offset, offset);
      offset += 16 + records[i].size();
    }
    if (chunk == bytes.size()) {
      EXPECT_EQ(r.zero_copy, static_cast<int>(records.size()) - 1);  // all but the empty record
    }
  }
}

TEST(TFRecordFormatTest, LargeRecordStraddlingManyChunks) {
  std::string big(3 << 20, '\0');
  std::mt19937 rng(5);
  for (auto& c : big) c = static_cast<char>(rng());
  const std::string bytes = Encode({"head", big, "tail"});
  ParseResult r = ParseAll(bytes, 4096);
  ASSERT_TRUE(r.finish.ok()) << r.finish;
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[1].data, big);
  EXPECT_EQ(r.records[2].data, "tail");
  EXPECT_EQ(r.records[2].offset, 20u + 16u + big.size());
}

TEST(TFRecordFormatTest, EmptyStreamIsFine) {
  ParseResult r = ParseAll("", 10);
  EXPECT_TRUE(r.finish.ok());
  EXPECT_TRUE(r.records.empty());
}

TEST(TFRecordFormatTest, TruncationAtEveryPoint) {
  const std::string bytes = Encode({"foo", "barbaz"});  // records of 19 and 22 bytes
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    for (size_t chunk : {size_t{1}, size_t{5}, bytes.size()}) {
      ParseResult r = ParseAll(bytes.substr(0, cut), chunk);
      if (cut == 0 || cut == 19 || cut == bytes.size()) {
        EXPECT_TRUE(r.finish.ok()) << cut << ": " << r.finish;
        continue;
      }
      ASSERT_FALSE(r.finish.ok()) << "cut " << cut;
      EXPECT_EQ(r.finish.code(), absl::StatusCode::kDataLoss);
      const size_t start = cut < 19 ? 0 : 19;
      const size_t have = cut - start;
      const size_t total = start == 0 ? 19 : 22;
      const std::string expected =
          have < 12 ? absl::StrCat("<TFRecord stream>: truncated record at offset ", start,
                                   ": expected 12 header bytes, file ends after ", have)
                    : absl::StrCat("<TFRecord stream>: truncated record at offset ", start, ": expected ", total,
                                   " bytes, file ends after ", have);
      EXPECT_EQ(r.finish.message(), expected);
      EXPECT_EQ(r.records.size(), cut < 19 ? 0u : 1u);
    }
  }
}

TEST(TFRecordFormatTest, LengthCrcMismatchIsStickyAndSaysRestIsUnreadable) {
  std::string bytes = Encode({"foo", "bar", "baz"});
  bytes[19 + 9] ^= 0x01;  // second record's length CRC
  TFRecordParserOptions options;
  options.file_name = "f.tfrecord";
  ParseResult r = ParseAll(bytes, 7, options);
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.errors[0].message(), HasSubstr("f.tfrecord: corrupted record at offset 19: length CRC mismatch"));
  EXPECT_THAT(r.errors[0].message(), HasSubstr("the rest of the file is unreadable"));
  EXPECT_EQ(r.finish, r.errors[0]);
}

TEST(TFRecordFormatTest, CorruptLengthWithoutCrcCheckHitsTheLimit) {
  std::string bytes = Encode({"foo"});
  bytes[5] = 0x10;  // length becomes 2^44 + 3
  TFRecordParserOptions options;
  options.verify_crc = false;
  ParseResult r = ParseAll(bytes, 1000, options);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.errors[0].message(),
              HasSubstr(absl::StrCat("record length ", (uint64_t{0x10} << 40) + 3, " exceeds the limit of ",
                                     kDefaultMaxRecordBytes)));
}

TEST(TFRecordFormatTest, RecordOverConfiguredLimit) {
  const std::string bytes = Encode({"ok", std::string(1000, 'x'), "never"});
  TFRecordParserOptions options;
  options.max_record_bytes = 999;
  ParseResult r = ParseAll(bytes, 64, options);
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0].message(),
              HasSubstr("corrupted record at offset 18: record length 1000 exceeds the limit of 999 bytes"));
  EXPECT_THAT(r.errors[0].message(), HasSubstr("the rest of the file is unreadable"));

  options.max_record_bytes = 1000;
  ParseResult at_limit = ParseAll(bytes, 64, options);
  EXPECT_TRUE(at_limit.finish.ok());
  EXPECT_EQ(at_limit.records.size(), 3u);
}

TEST(TFRecordFormatTest, HugeLengthWithValidCrcIsNeverAllocated) {
  // Headers that are internally consistent but claim absurd lengths, with the limit switched off: the
  // parser must fail on its hard limit or on what memory can hold, never try to allocate the length
  // (ASan would abort on the huge allocation). A length past RAM + swap is RESOURCE_EXHAUSTED naming the
  // record's offset and the size asked (issue 13: it used to surface as INTERNAL std::bad_alloc).
  TFRecordParserOptions options;
  options.file_name = "huge.tfrecord";
  options.max_record_bytes = ~uint64_t{0};
  ASSERT_LT(AllocationCeiling(), uint64_t{1} << 62);
  for (uint64_t length : {~uint64_t{0} - 5, uint64_t{1} << 62, AllocationCeiling()}) {
    std::byte header[kTFRecordHeaderBytes];
    EncodeTFRecordHeader(length, header);
    std::string bytes = Encode({"first"});
    bytes.append(reinterpret_cast<const char*>(header), sizeof(header));
    bytes += "some data";
    ParseResult r = ParseAll(bytes, 3, options);
    ASSERT_EQ(r.records.size(), 1u);
    ASSERT_FALSE(r.finish.ok());
    if (length == ~uint64_t{0} - 5) {
      EXPECT_EQ(r.finish.code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(r.finish.message(), HasSubstr("exceeds the limit"));
    } else {
      EXPECT_EQ(r.finish.code(), absl::StatusCode::kResourceExhausted) << r.finish;
      EXPECT_THAT(r.finish.message(),
                  HasSubstr(absl::StrCat("huge.tfrecord: record at offset 21 needs ", length,
                                         " bytes: out of memory")));
      EXPECT_THAT(r.finish.message(), HasSubstr("more than this process can ever allocate"));
    }
  }
}

TEST(TFRecordFormatTest, BogusLengthBelowLimitOnlyBuffersWhatArrives) {
  // Without CRC checks a garbage length of 200 MB is accepted; the parser must not reserve it up front,
  // and the file end reports the truncation.
  std::byte header[kTFRecordHeaderBytes];
  EncodeTFRecordHeader(200u << 20, header);
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes += std::string(100, 'z');
  ParseResult r = ParseAll(bytes, 10);
  ASSERT_FALSE(r.finish.ok());
  EXPECT_THAT(r.finish.message(),
              HasSubstr(absl::StrCat("truncated record at offset 0: expected ", (200u << 20) + 16,
                                     " bytes, file ends after 112")));
}

TEST(TFRecordFormatTest, DataCrcMismatchThenContinues) {
  std::string bytes = Encode({"foo", "bar", "baz"});
  bytes[19 + 12] = 'c';  // "bar" -> "car"
  TFRecordParserOptions options;
  options.file_name = "d.tfrecord";
  ParseResult r = ParseAll(bytes, 5, options);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.errors[0].message(), HasSubstr("d.tfrecord: corrupted record at offset 19: data CRC mismatch"));
  EXPECT_TRUE(r.finish.ok()) << r.finish;
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].data, "foo");
  EXPECT_EQ(r.records[1].data, "baz");
  EXPECT_EQ(r.records[1].offset, 38u);
}

TEST(TFRecordFormatTest, SkipCorruptRecordsCountsThem) {
  std::string bytes = Encode({"foo", "bar", "baz", "qux"});
  bytes[12] = 'g';
  bytes[57 + 13] = 'X';
  for (size_t chunk : {size_t{1}, size_t{9}, bytes.size()}) {
    TFRecordParserOptions options;
    options.skip_corrupt_records = true;
    TFRecordDecoder decoder(Compression::kNone, options);
    decoder.Feed(AsBytes(bytes).subspan(0, 0));
    std::vector<std::string> got;
    for (size_t pos = 0; pos < bytes.size(); pos += chunk) {
      decoder.Feed(AsBytes(bytes).subspan(pos, std::min(chunk, bytes.size() - pos)));
      for (;;) {
        absl::StatusOr<std::optional<TFRecordView>> r = decoder.Next();
        ASSERT_TRUE(r.ok()) << r.status();
        if (!*r) break;
        got.emplace_back((*r)->str());
      }
    }
    EXPECT_TRUE(decoder.Finish().ok());
    EXPECT_EQ(got, (std::vector<std::string>{"bar", "baz"}));
    EXPECT_EQ(decoder.parser().skipped_records(), 2u);
    EXPECT_EQ(decoder.parser().records_returned(), 2u);
  }
}

TEST(TFRecordFormatTest, VerifyCrcOffReturnsCorruptData) {
  std::string bytes = Encode({"foo"});
  bytes[12] = 'g';
  bytes[8] ^= 1;
  TFRecordParserOptions options;
  options.verify_crc = false;
  ParseResult r = ParseAll(bytes, 100, options);
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].data, "goo");
}

TEST(TFRecordFormatTest, FeedBeforeConsumingIsFailedPrecondition) {
  const std::string bytes = Encode({"foo", "bar"});
  TFRecordParser parser;
  parser.Feed(AsBytes(bytes));
  absl::StatusOr<std::optional<TFRecordView>> first = parser.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  parser.Feed(AsBytes(bytes));  // "bar" not consumed yet
  absl::StatusOr<std::optional<TFRecordView>> second = parser.Next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(TFRecordFormatTest, CompressedDecoderRoundTrip) {
  const std::vector<std::string> records = SampleRecords();
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    absl::StatusOr<std::string> bytes = EncodeTFRecords(records, c);
    ASSERT_TRUE(bytes.ok());
    for (size_t chunk : {size_t{1}, size_t{100}, bytes->size()}) {
      ParseResult r = ParseAll(*bytes, chunk, {}, c);
      ASSERT_TRUE(r.finish.ok()) << r.finish;
      ASSERT_EQ(r.records.size(), records.size());
      for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(r.records[i].data, records[i]);
    }
  }
}

TEST(TFRecordFormatTest, CompressedTruncationAndCorruption) {
  absl::StatusOr<std::string> gz = EncodeTFRecords(SampleRecords(), Compression::kGzip);
  ASSERT_TRUE(gz.ok());
  ParseResult truncated = ParseAll(gz->substr(0, gz->size() - 3), 50, Named("t.gz"), Compression::kGzip);
  EXPECT_EQ(truncated.finish.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.finish.message(), HasSubstr("t.gz: truncated GZIP stream"));

  std::string bad = *gz;
  bad[bad.size() / 2] ^= 0x40;
  bad[bad.size() / 2 + 1] ^= 0x21;
  ParseResult corrupt = ParseAll(bad, 50, Named("c.gz"), Compression::kGzip);
  ASSERT_FALSE(corrupt.errors.empty());
  EXPECT_EQ(corrupt.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.errors[0].message(), HasSubstr("c.gz"));

  ParseResult wrong_format = ParseAll(Encode({"foo"}), 50, Named("plain"), Compression::kZlib);
  ASSERT_FALSE(wrong_format.errors.empty());
  EXPECT_THAT(wrong_format.errors[0].message(), HasSubstr("plain: corrupt ZLIB stream at compressed offset"));
}

TEST(TFRecordFormatTest, ParserOptionsFromReaderOptions) {
  TFRecordReaderOptions reader;
  reader.verify_crc = false;
  reader.max_record_bytes = 123;
  reader.skip_corrupt_records = true;
  const TFRecordParserOptions parser = ParserOptionsFor(reader, "x.tfrecord");
  EXPECT_FALSE(parser.verify_crc);
  EXPECT_EQ(parser.max_record_bytes, 123u);
  EXPECT_TRUE(parser.skip_corrupt_records);
  EXPECT_EQ(parser.file_name, "x.tfrecord");
}

// Fuzz-style: arbitrary bytes and mutations of valid streams must only yield records or statuses,
// never crash, hang or over-allocate (ASan checks the last).
void CheckSane(const ParseResult& r, size_t input_size) {
  EXPECT_LE(r.records.size() * 16, input_size);
  for (const absl::Status& s : r.errors) {
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss) << s;
  }
  if (!r.finish.ok()) {
    EXPECT_EQ(r.finish.code(), absl::StatusCode::kDataLoss) << r.finish;
  }
}

TEST(TFRecordFormatTest, WalkFindsCompleteRecordsAndStopsAtBadFraming) {
  std::string bytes;
  for (const char* r : {"alpha", "", "gamma!"}) AppendTFRecord(absl::string_view(r), &bytes);
  const std::span<const std::byte> all = AsBytes(bytes);
  std::vector<FramedRecord> walked = WalkTFRecords(all, 1000, 1000, kDefaultMaxRecordBytes, 100);
  ASSERT_EQ(walked.size(), 3u);
  EXPECT_EQ(walked[1].offset, 1000u + 21);
  EXPECT_EQ(walked[2].length, 6u);
  EXPECT_EQ(VerifyDataCrcs(walked), 1000u + bytes.size());
  // From the second record; a cut-off last record; a record cap; a start before the bytes.
  EXPECT_EQ(WalkTFRecords(all, 1000, 1021, kDefaultMaxRecordBytes, 100).size(), 2u);
  EXPECT_EQ(WalkTFRecords(all.first(bytes.size() - 1), 1000, 1000, kDefaultMaxRecordBytes, 100).size(), 2u);
  EXPECT_EQ(WalkTFRecords(all, 1000, 1000, kDefaultMaxRecordBytes, 1).size(), 1u);
  EXPECT_TRUE(WalkTFRecords(all, 1000, 999, kDefaultMaxRecordBytes, 100).empty());
  EXPECT_EQ(WalkTFRecords(all, 1000, 1000, 5, 100).size(), 2u);  // "gamma!" is over the limit
  std::string bad_length = bytes;
  bad_length[21 + 9] ^= 1;
  EXPECT_EQ(WalkTFRecords(AsBytes(bad_length), 0, 0, kDefaultMaxRecordBytes, 100).size(), 1u);
  // A bad data CRC ends the trusted range at that record's header.
  std::string bad_data = bytes;
  bad_data[37 + 12] ^= 1;
  EXPECT_EQ(VerifyDataCrcs(WalkTFRecords(AsBytes(bad_data), 0, 0, kDefaultMaxRecordBytes, 100)), 37u);
}

TEST(TFRecordFormatTest, TrustedRecordsSkipTheDataCrcOnlyInsideTheRange) {
  std::string bytes;
  for (const char* r : {"one", "two", "three"}) AppendTFRecord(absl::string_view(r), &bytes);
  bytes[12] ^= 1;       // data of "one" (offset 0)
  bytes[19 + 12] ^= 1;  // data of "two" (offset 19)
  TFRecordParser parser;
  parser.TrustDataCrcs(19, 38);  // only "two" is trusted
  parser.Feed(AsBytes(bytes));
  EXPECT_EQ(parser.NextUnstartedRecord(), std::nullopt);  // the chunk is not consumed yet
  absl::StatusOr<std::optional<TFRecordView>> first = parser.Next();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDataLoss);
  absl::StatusOr<std::optional<TFRecordView>> second = parser.Next();
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->offset, 19u);
  absl::StatusOr<std::optional<TFRecordView>> third = parser.Next();
  ASSERT_TRUE(third.ok() && third->has_value());
  EXPECT_EQ((*third)->str(), "three");
  EXPECT_EQ(*parser.Next(), std::nullopt);
  EXPECT_EQ(parser.NextUnstartedRecord(), bytes.size());
}

TEST(TFRecordFormatTest, NextUnstartedRecordAfterAPartialRecord) {
  std::string bytes;
  AppendTFRecord(absl::string_view("0123456789"), &bytes);
  TFRecordParser parser;
  parser.Feed(AsBytes(bytes).first(15));  // header and 3 data bytes
  EXPECT_EQ(*parser.Next(), std::nullopt);
  EXPECT_EQ(parser.NextUnstartedRecord(), bytes.size());
  TFRecordParser header_only;
  header_only.Feed(AsBytes(bytes).first(5));  // part of the header
  EXPECT_EQ(*header_only.Next(), std::nullopt);
  EXPECT_EQ(header_only.NextUnstartedRecord(), std::nullopt);
}

TEST(TFRecordFormatTest, FuzzRandomGarbage) {
  std::mt19937 rng(2024);
  for (int iter = 0; iter < 400 / kFuzzScale; ++iter) {
    std::string garbage(rng() % 3000, '\0');
    for (auto& c : garbage) c = static_cast<char>(rng());
    const size_t chunk = 1 + rng() % 700;
    TFRecordParserOptions options;
    options.verify_crc = iter % 2 == 0;
    options.skip_corrupt_records = iter % 3 == 0;
    if (iter % 5 == 0) options.max_record_bytes = rng() % 5000;
    CheckSane(ParseAll(garbage, chunk, options), garbage.size());
    const Compression c = iter % 3 == 0 ? Compression::kGzip : Compression::kZlib;
    CheckSane(ParseAll(garbage, chunk, options, c), 1 << 30);
  }
}

TEST(TFRecordFormatTest, FuzzMutatedValidStreams) {
  const std::vector<std::string> records = SampleRecords();
  const std::string plain = Encode(records);
  absl::StatusOr<std::string> gz = EncodeTFRecords(records, Compression::kGzip);
  ASSERT_TRUE(gz.ok());
  std::mt19937 rng(77);
  for (int iter = 0; iter < 600 / kFuzzScale; ++iter) {
    const bool compressed = iter % 4 == 3;
    std::string bytes = compressed ? *gz : plain;
    const int mutations = 1 + rng() % 4;
    for (int m = 0; m < mutations; ++m) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
          break;
        case 1:
          bytes[at] = static_cast<char>(rng());
          break;
        case 2:
          bytes.resize(at);
          break;
        case 3:
          bytes.insert(at, std::string(1 + rng() % 20, static_cast<char>(rng())));
          break;
      }
      if (bytes.empty()) bytes = "x";
    }
    TFRecordParserOptions options;
    options.verify_crc = rng() % 4 != 0;
    options.skip_corrupt_records = rng() % 2 == 0;
    const size_t chunk = 1 + rng() % 2000;
    ParseResult r =
        ParseAll(bytes, chunk, options, compressed ? Compression::kGzip : Compression::kNone);
    CheckSane(r, compressed ? size_t{1} << 30 : bytes.size());
    // With CRCs on, every record returned is one of the originals.
    if (options.verify_crc) {
      for (const TFRecord& rec : r.records) {
        EXPECT_NE(std::find(records.begin(), records.end(), rec.data), records.end());
      }
    }
  }
}

}  // namespace
}  // namespace tfrecord_format_test_file
}  // namespace sluice::io
