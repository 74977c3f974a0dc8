// Reads the real TFRecord files in shared/data/tfrecord (written by TensorFlow, Beam and TFX; see the
// .source.txt sidecars there) and checks counts, contents and the expected errors of the broken files.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_format.h"
#include "io/tfrecord_writer.h"
#include "io/zlib_stream.h"
#include "sluice/io/tfrecord.h"

namespace sluice::io {
namespace tfrecord_shared_data_test_file {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

#if defined(SLUICE_SANITIZED_BUILD)
constexpr int kFuzzIterations = 60;
#else
constexpr int kFuzzIterations = 300;
#endif

fs::path DataDir() {
  const char* env = std::getenv("SLUICE_SHARED_DIR");
  const fs::path shared = env != nullptr && *env != '\0' ? fs::path(env) : fs::path("../shared");
  return shared / "data" / "tfrecord";
}

// Test-only synchronous reader: the whole file in memory (the files are small).
std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path << " (set SLUICE_SHARED_DIR to the shared/ folder)";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct FileResult {
  std::vector<TFRecord> records;
  std::vector<absl::Status> errors;  // record errors; reading continues after each
  absl::Status finish;
};

// Feeds the file's bytes to a decoder in chunks of `chunk` bytes, as the async reader will.
FileResult ReadRecords(const fs::path& path, Compression compression, size_t chunk,
                       bool skip_corrupt = false) {
  const std::string bytes = ReadFile(path);
  TFRecordParserOptions options;
  options.file_name = path.filename().string();
  options.skip_corrupt_records = skip_corrupt;
  TFRecordDecoder decoder(compression, options);
  FileResult result;
  size_t pos = 0;
  do {
    const size_t n = std::min(chunk, bytes.size() - pos);
    decoder.Feed(AsBytes(bytes).subspan(pos, n));
    pos += n;
    for (int guard = 0; guard < 1'000'000; ++guard) {
      absl::StatusOr<std::optional<TFRecordView>> r = decoder.Next();
      if (!r.ok()) {
        if (!result.errors.empty() && result.errors.back() == r.status()) {  // sticky: stop
          result.finish = r.status();
          return result;
        }
        result.errors.push_back(r.status());
        continue;
      }
      if (!*r) break;
      result.records.push_back((*r)->ToOwned());
    }
  } while (pos < bytes.size());
  result.finish = decoder.Finish();
  return result;
}

std::vector<size_t> ChunkSizes(const fs::path& path) {
  const size_t size = fs::file_size(path);
  std::vector<size_t> sizes = {4096, std::max<size_t>(size, 1)};
  if (size <= 200'000) sizes.push_back(7);
  if (size <= 20'000) sizes.push_back(1);
  return sizes;
}

// Reads `path` with every chunk size; all must agree. Returns the records.
std::vector<std::string> ReadAllChunkings(const fs::path& path, Compression compression) {
  std::vector<std::string> first;
  bool have_first = false;
  for (size_t chunk : ChunkSizes(path)) {
    FileResult r = ReadRecords(path, compression, chunk);
    EXPECT_TRUE(r.errors.empty()) << path << ": " << r.errors[0];
    EXPECT_TRUE(r.finish.ok()) << path << ": " << r.finish;
    std::vector<std::string> data;
    for (TFRecord& rec : r.records) data.push_back(std::move(rec.data));
    if (!have_first) {
      first = std::move(data);
      have_first = true;
    } else {
      EXPECT_EQ(data, first) << path << " chunk " << chunk;
    }
  }
  return first;
}

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class SharedDataTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::is_directory(DataDir()))
        << DataDir() << " not found: run from the repository root beside shared/ or set SLUICE_SHARED_DIR";
  }
};

TEST_F(SharedDataTest, BeamFiles) {
  EXPECT_EQ(ReadAllChunkings(DataDir() / "beam_foo.tfrecord", Compression::kNone),
            (std::vector<std::string>{"foo"}));
  EXPECT_EQ(ReadAllChunkings(DataDir() / "beam_foo_bar.tfrecord", Compression::kNone),
            (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ(ReadAllChunkings(DataDir() / "beam_bar_foo.tfrecord", Compression::kNone),
            (std::vector<std::string>{"bar", "foo"}));
}

TEST_F(SharedDataTest, TorchdataFiles) {
  std::vector<std::string> examples = ReadAllChunkings(DataDir() / "torchdata_example.tfrecord", Compression::kNone);
  ASSERT_EQ(examples.size(), 4u);
  for (const std::string& e : examples) EXPECT_THAT(e, HasSubstr("test str"));
  std::vector<std::string> sequences =
      ReadAllChunkings(DataDir() / "torchdata_sequence_example.tfrecord", Compression::kNone);
  ASSERT_EQ(sequences.size(), 4u);
  // Each SequenceExample repeats its features 3, 5, 7, 9 times, so they grow.
  for (size_t i = 1; i < sequences.size(); ++i) EXPECT_GT(sequences[i].size(), sequences[i - 1].size());
}

TEST_F(SharedDataTest, TaxiShards) {
  const std::vector<size_t> train_counts = {826, 826, 826, 825, 826, 825, 826, 826, 826, 826, 826, 825};
  const std::vector<size_t> eval_counts = {424, 425, 424, 424, 424, 425, 425, 424, 424, 424, 424, 424};
  for (const auto& [split, counts, total] :
       {std::tuple{"Split-train", train_counts, size_t{9909}}, std::tuple{"Split-eval", eval_counts, size_t{5091}}}) {
    const std::vector<fs::path> files = FilesIn(DataDir() / "tfx_chicago_taxi_csv_example_gen" / split);
    ASSERT_EQ(files.size(), 12u) << split;
    size_t sum = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::vector<std::string> records = ReadAllChunkings(files[i], Compression::kGzip);
      EXPECT_EQ(records.size(), counts[i]) << files[i];
      for (const std::string& r : records) {
        EXPECT_GE(r.size(), 453u);
        EXPECT_LE(r.size(), 529u);
      }
      sum += records.size();
    }
    EXPECT_EQ(sum, total) << split;
  }
}

TEST_F(SharedDataTest, ExternalTFRecord) {
  const std::vector<fs::path> files = FilesIn(DataDir() / "tfx_external_tfrecord");
  ASSERT_EQ(files.size(), 2u);
  const size_t a = ReadAllChunkings(files[0], Compression::kGzip).size();
  const size_t b = ReadAllChunkings(files[1], Compression::kGzip).size();
  EXPECT_EQ(a, 9988u);
  EXPECT_EQ(b, 5012u);
  EXPECT_EQ(a + b, 15000u);
}

TEST_F(SharedDataTest, Penguin) {
  const fs::path dir = DataDir() / "tfx_penguin";
  const std::vector<std::string> train =
      ReadAllChunkings(dir / "Split-train" / "data_tfrecord-00000-of-00001.gz", Compression::kGzip);
  const std::vector<std::string> eval =
      ReadAllChunkings(dir / "Split-eval" / "data_tfrecord-00000-of-00001.gz", Compression::kGzip);
  EXPECT_EQ(train.size(), 234u);
  EXPECT_EQ(eval.size(), 100u);
  for (const std::string& r : eval) EXPECT_EQ(r.size(), 136u);
  // The uncompressed copy holds exactly the same records.
  EXPECT_EQ(ReadAllChunkings(DataDir() / "derived" / "tfx_penguin_eval_uncompressed.tfrecord", Compression::kNone),
            eval);
}

TEST_F(SharedDataTest, SequenceExamples) {
  const std::vector<std::string> records =
      ReadAllChunkings(DataDir() / "tfx_tfrecord_sequence" / "data_tfrecord_eval.gz", Compression::kGzip);
  EXPECT_EQ(records.size(), 4500u);
  for (const std::string& r : records) {
    EXPECT_GE(r.size(), 47u);
    EXPECT_LE(r.size(), 61u);
  }
}

TEST_F(SharedDataTest, DerivedCompressedCopiesMatchOriginal) {
  const std::vector<std::string> original =
      ReadAllChunkings(DataDir() / "torchdata_example.tfrecord", Compression::kNone);
  ASSERT_EQ(original.size(), 4u);
  EXPECT_EQ(ReadAllChunkings(DataDir() / "derived" / "torchdata_example.tfrecord.gz", Compression::kGzip), original);
  EXPECT_EQ(ReadAllChunkings(DataDir() / "derived" / "torchdata_example.tfrecord.zlib", Compression::kZlib),
            original);
  // Byte level: the inflated streams are the original file.
  const std::string original_bytes = ReadFile(DataDir() / "torchdata_example.tfrecord");
  for (const auto& [name, format] : {std::pair{"torchdata_example.tfrecord.gz", ZlibFormat::kGzip},
                                     std::pair{"torchdata_example.tfrecord.zlib", ZlibFormat::kZlib}}) {
    const std::string compressed = ReadFile(DataDir() / "derived" / name);
    Inflater inflater(format, name, 100);
    inflater.Feed(AsBytes(compressed));
    std::string out;
    for (int guard = 0; guard < 100000; ++guard) {
      absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
      ASSERT_TRUE(piece.ok()) << piece.status();
      if (piece->empty()) break;
      out.append(reinterpret_cast<const char*>(piece->data()), piece->size());
    }
    EXPECT_TRUE(inflater.Finish().ok());
    EXPECT_EQ(out, original_bytes) << name;
  }
  // Reading a compressed file with the wrong compression fails cleanly.
  FileResult wrong = ReadRecords(DataDir() / "derived" / "torchdata_example.tfrecord.gz", Compression::kZlib, 4096);
  ASSERT_FALSE(wrong.errors.empty());
  EXPECT_EQ(wrong.errors[0].code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(wrong.errors[0].message(),
              HasSubstr("torchdata_example.tfrecord.gz: corrupt ZLIB stream at compressed offset"));
}

TEST_F(SharedDataTest, TruncatedFile) {
  // derived/README.source.txt: first record b"foo", then a DataLoss truncated-record error.
  const fs::path path = DataDir() / "derived" / "beam_foo_bar_truncated.tfrecord";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}}) {
    FileResult r = ReadRecords(path, Compression::kNone, chunk);
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].data, "foo");
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.finish.code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(r.finish.message(),
              "beam_foo_bar_truncated.tfrecord: truncated record at offset 19: expected 19 bytes, file ends after 17");
  }
}

TEST_F(SharedDataTest, CorruptDataFile) {
  // derived/README.source.txt: byte 12 flipped -> data CRC mismatch on record 0.
  const fs::path path = DataDir() / "derived" / "beam_foo_bar_corrupt_data.tfrecord";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}}) {
    FileResult r = ReadRecords(path, Compression::kNone, chunk);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(r.errors[0].message(),
                HasSubstr("beam_foo_bar_corrupt_data.tfrecord: corrupted record at offset 0: data CRC mismatch"));
    // The framing is intact: the next record is still readable.
    ASSERT_EQ(r.records.size(), 1u);
    EXPECT_EQ(r.records[0].data, "bar");
    EXPECT_EQ(r.records[0].offset, 19u);
    EXPECT_TRUE(r.finish.ok());

    FileResult skipped = ReadRecords(path, Compression::kNone, chunk, /*skip_corrupt=*/true);
    EXPECT_TRUE(skipped.errors.empty());
    ASSERT_EQ(skipped.records.size(), 1u);
    EXPECT_EQ(skipped.records[0].data, "bar");
  }
}

TEST_F(SharedDataTest, WriterReproducesTensorFlowBytes) {
  for (const auto& [name, payloads] :
       {std::pair{"beam_foo.tfrecord", std::vector<std::string>{"foo"}},
        std::pair{"beam_foo_bar.tfrecord", std::vector<std::string>{"foo", "bar"}},
        std::pair{"beam_bar_foo.tfrecord", std::vector<std::string>{"bar", "foo"}}}) {
    const std::string path = absl::StrCat(testing::TempDir(), "/", name);
    absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& p : payloads) ASSERT_TRUE(writer->Write(p).ok());
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_EQ(ReadFile(path), ReadFile(DataDir() / name)) << name;
  }
  // Re-encoding every record of a TensorFlow-written file reproduces the file byte for byte.
  const fs::path torch = DataDir() / "torchdata_sequence_example.tfrecord";
  absl::StatusOr<std::string> reencoded =
      EncodeTFRecords(ReadAllChunkings(torch, Compression::kNone), Compression::kNone);
  ASSERT_TRUE(reencoded.ok());
  EXPECT_EQ(*reencoded, ReadFile(torch));
}

TEST_F(SharedDataTest, WriterRoundTripOfRealRecordsCompressed) {
  const std::vector<std::string> records =
      ReadAllChunkings(DataDir() / "tfx_tfrecord_sequence" / "data_tfrecord_eval.gz", Compression::kGzip);
  for (Compression c : {Compression::kGzip, Compression::kZlib, Compression::kNone}) {
    const std::string path = absl::StrCat(testing::TempDir(), "/sequence_copy_", CompressionName(c));
    TFRecordWriterOptions options;
    options.compression = c;
    absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path, options);
    ASSERT_TRUE(writer.ok());
    for (const std::string& r : records) ASSERT_TRUE(writer->Write(r).ok());
    ASSERT_TRUE(writer->Close().ok());
    EXPECT_EQ(ReadAllChunkings(path, c), records) << CompressionName(c);
  }
}

TEST_F(SharedDataTest, MutatedRealFilesNeverCrash) {
  const std::vector<std::pair<fs::path, Compression>> inputs = {
      {DataDir() / "torchdata_sequence_example.tfrecord", Compression::kNone},
      {DataDir() / "derived" / "tfx_penguin_eval_uncompressed.tfrecord", Compression::kNone},
      {DataDir() / "derived" / "torchdata_example.tfrecord.gz", Compression::kGzip},
      {DataDir() / "derived" / "torchdata_example.tfrecord.zlib", Compression::kZlib}};
  std::mt19937 rng(31337);
  for (int iter = 0; iter < kFuzzIterations; ++iter) {
    const auto& [path, compression] = inputs[iter % inputs.size()];
    std::string bytes = ReadFile(path);
    for (int m = 0, mutations = 1 + rng() % 3; m < mutations && !bytes.empty(); ++m) {
      const size_t at = rng() % bytes.size();
      if (rng() % 3 == 0) {
        bytes.resize(at);
      } else {
        bytes[at] = static_cast<char>(rng());
      }
    }
    TFRecordParserOptions options;
    options.file_name = path.filename().string();
    options.verify_crc = rng() % 3 != 0;
    options.skip_corrupt_records = rng() % 2 == 0;
    TFRecordDecoder decoder(compression, options);
    const size_t chunk = 1 + rng() % 5000;
    size_t records = 0;
    bool failed = false;
    for (size_t pos = 0; pos < bytes.size() && !failed; pos += chunk) {
      decoder.Feed(AsBytes(bytes).subspan(pos, std::min(chunk, bytes.size() - pos)));
      for (int guard = 0; guard < 100000; ++guard) {
        absl::StatusOr<std::optional<TFRecordView>> r = decoder.Next();
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
          EXPECT_THAT(r.status().message(), HasSubstr(path.filename().string()));
          failed = true;
          break;
        }
        if (!*r) break;
        ++records;
      }
    }
    if (!failed) {
      absl::Status s = decoder.Finish();
      if (!s.ok()) {
        EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      }
    }
    EXPECT_LE(records, 100u);
  }
}

}  // namespace
}  // namespace tfrecord_shared_data_test_file
}  // namespace sluice::io
