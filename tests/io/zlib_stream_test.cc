#include "io/zlib_stream.h"

#include <algorithm>
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::io {
namespace zlib_stream_test_file {
namespace {

using ::testing::HasSubstr;

std::span<const std::byte> Bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Feeds `data` in chunks of `chunk` bytes, drains every output, then Finish().
absl::StatusOr<std::string> InflateAll(InflateLibrary library, ZlibFormat format, const std::string& data,
                                       size_t chunk, size_t out_chunk = kDefaultInflateChunkBytes) {
  Inflater inflater(format, "test.gz", out_chunk, library);
  std::string out;
  size_t pos = 0;
  do {
    const size_t n = std::min(chunk, data.size() - pos);
    inflater.Feed(Bytes(data).subspan(pos, n));
    pos += n;
    for (;;) {
      absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
      if (!piece.ok()) return piece.status();
      if (piece->empty()) break;
      out.append(reinterpret_cast<const char*>(piece->data()), piece->size());
    }
  } while (pos < data.size());
  if (absl::Status s = inflater.Finish(); !s.ok()) return s;
  return out;
}

std::string Compress(ZlibFormat format, const std::string& data, int level = -1) {
  absl::StatusOr<Deflater> d = Deflater::Create(format, level);
  EXPECT_TRUE(d.ok()) << d.status();
  std::string out;
  EXPECT_TRUE(d->Compress(Bytes(data), &out).ok());
  EXPECT_TRUE(d->Finish(&out).ok());
  return out;
}

std::string RandomText(size_t n, uint32_t seed) {
  // Compressible but not trivial: words from a small alphabet.
  std::mt19937 rng(seed);
  std::string s(n, ' ');
  for (auto& c : s) c = static_cast<char>('a' + rng() % 12);
  return s;
}

// Every Inflater test runs on both decoders: zlib, and ISA-L where this build has it.
class InflateTest : public ::testing::TestWithParam<InflateLibrary> {
 protected:
  void SetUp() override {
    if (GetParam() == InflateLibrary::kIsal && !IsalInflateAvailable()) GTEST_SKIP() << "built without ISA-L";
  }
};

INSTANTIATE_TEST_SUITE_P(Libraries, InflateTest,
                         ::testing::Values(InflateLibrary::kZlib, InflateLibrary::kIsal),
                         [](const ::testing::TestParamInfo<InflateLibrary>& info) {
                           return info.param == InflateLibrary::kIsal ? "Isal" : "Zlib";
                         });

TEST_P(InflateTest, RoundTripGzipAndZlibInManyChunkSizes) {
  const std::string data = RandomText(300000, 1);
  for (ZlibFormat format : {ZlibFormat::kGzip, ZlibFormat::kZlib}) {
    const std::string compressed = Compress(format, data);
    ASSERT_LT(compressed.size(), data.size());
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, compressed.size()}) {
      if (chunk == 1 && compressed.size() > 50000) continue;
      absl::StatusOr<std::string> out = InflateAll(GetParam(), format, compressed, chunk, 1000);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(*out, data) << "chunk " << chunk;
      absl::StatusOr<std::string> autodetected = InflateAll(GetParam(), ZlibFormat::kAuto, compressed, chunk);
      ASSERT_TRUE(autodetected.ok()) << autodetected.status();
      EXPECT_EQ(*autodetected, data);
    }
  }
}

TEST_P(InflateTest, ByteByByteFeedOfSmallStream) {
  const std::string data = RandomText(5000, 2);
  const std::string compressed = Compress(ZlibFormat::kGzip, data, 9);
  absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kGzip, compressed, 1, 64);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, data);
}

TEST_P(InflateTest, RawDeflate) {
  const std::string data = RandomText(20000, 3);
  const std::string zlib = Compress(ZlibFormat::kZlib, data);
  // A zlib stream is a 2-byte header, raw deflate data and a 4-byte Adler-32 trailer.
  const std::string raw = zlib.substr(2, zlib.size() - 6);
  absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kRawDeflate, raw, 333);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, data);
}

TEST_P(InflateTest, ConcatenatedGzipMembersReadAsOneStream) {
  const std::string a = RandomText(10000, 4), b = RandomText(7000, 5), c;
  const std::string compressed =
      Compress(ZlibFormat::kGzip, a) + Compress(ZlibFormat::kGzip, b) + Compress(ZlibFormat::kGzip, c);
  for (size_t chunk : {size_t{5}, size_t{100}, compressed.size()}) {
    absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kGzip, compressed, chunk);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, a + b);
  }
}

TEST_P(InflateTest, EmptyInputIsAnEmptyStream) {
  absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kGzip, "", 10);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "");
  absl::StatusOr<std::string> empty_payload =
      InflateAll(GetParam(), ZlibFormat::kZlib, Compress(ZlibFormat::kZlib, ""), 1);
  ASSERT_TRUE(empty_payload.ok()) << empty_payload.status();
  EXPECT_EQ(*empty_payload, "");
}

TEST_P(InflateTest, NotGzipIsDataLossWithOffset) {
  absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kGzip, "this is not gzip at all", 4);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("test.gz: corrupt GZIP stream at compressed offset"));
}

TEST_P(InflateTest, CorruptedBodyIsDataLoss) {
  const std::string data = RandomText(50000, 6);
  for (ZlibFormat format : {ZlibFormat::kGzip, ZlibFormat::kZlib}) {
    const std::string good = Compress(format, data);
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
      std::string bad = good;
      // Corrupt a run in the middle (the headers are tested above), where the deflate decoder or the
      // trailer check must notice.
      const size_t at = 20 + rng() % (bad.size() - 40);
      for (size_t i = at; i < at + 8; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      absl::StatusOr<std::string> out = InflateAll(GetParam(), format, bad, 1024);
      ASSERT_FALSE(out.ok()) << "trial " << trial;
      EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss) << out.status();
      EXPECT_THAT(out.status().message(), HasSubstr("compressed offset")) << out.status();
    }
  }
}

// Feeds all of `data` at once and collects the output until the first error (returned in *error).
std::string InflateUntilError(InflateLibrary library, ZlibFormat format, const std::string& data,
                              absl::Status* error) {
  Inflater inflater(format, "test.gz", kDefaultInflateChunkBytes, library);
  inflater.Feed(Bytes(data));
  std::string out;
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
    if (!piece.ok()) {
      *error = piece.status();
      return out;
    }
    if (piece->empty()) break;
    out.append(reinterpret_cast<const char*>(piece->data()), piece->size());
  }
  *error = inflater.Finish();
  return out;
}

// Issue 13: a bad trailer used to lose the last call's output (up to 256 KiB) with the error.
TEST_P(InflateTest, BadTrailerYieldsAllDataThenDataLoss) {
  const std::string data = RandomText(1'000'000, 21);  // several output chunks
  // gzip's trailer: CRC32 then ISIZE; zlib's: Adler-32.
  for (const auto& [format, from_end, check] :
       {std::tuple{ZlibFormat::kGzip, size_t{8}, "incorrect data check"},
        std::tuple{ZlibFormat::kGzip, size_t{4}, "incorrect length check"},
        std::tuple{ZlibFormat::kZlib, size_t{4}, "incorrect data check"}}) {
    std::string bad = Compress(format, data);
    bad[bad.size() - from_end] = static_cast<char>(bad[bad.size() - from_end] ^ 0x01);
    absl::Status error;
    const std::string out = InflateUntilError(GetParam(), format, bad, &error);
    EXPECT_EQ(out.size(), data.size()) << check;
    EXPECT_TRUE(out == data) << check;
    EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
    // Named where the bad field starts (each is 4 bytes).
    EXPECT_THAT(std::string(error.message()), HasSubstr(absl::StrCat("compressed offset ", bad.size() - from_end,
                                                                     ": ", check)));
    EXPECT_THAT(std::string(error.message()), HasSubstr(absl::StrCat(data.size(), " bytes decompressed")));
  }
}

// Damage right after a sync flush point: everything before the point comes out, then the error naming
// the damaged byte's offset.
TEST_P(InflateTest, DamageMidStreamYieldsEverythingBeforeIt) {
  const std::string part1 = RandomText(700'000, 22);
  const std::string part2 = RandomText(300'000, 23);
  for (ZlibFormat format : {ZlibFormat::kGzip, ZlibFormat::kZlib}) {
    absl::StatusOr<Deflater> d = Deflater::Create(format);
    ASSERT_TRUE(d.ok());
    std::string bad;
    ASSERT_TRUE(d->Compress(Bytes(part1), &bad).ok());
    ASSERT_TRUE(d->Flush(&bad).ok());
    const size_t flushed = bad.size();  // a deflate block starts on this byte
    ASSERT_TRUE(d->Compress(Bytes(part2), &bad).ok());
    ASSERT_TRUE(d->Finish(&bad).ok());
    bad[flushed] = static_cast<char>(bad[flushed] | 0x06);  // block type 3: reserved, refused at once
    absl::Status error;
    const std::string out = InflateUntilError(GetParam(), format, bad, &error);
    EXPECT_TRUE(out == part1) << out.size() << " bytes, expected " << part1.size();
    EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
    EXPECT_THAT(error.message(), HasSubstr(absl::StrCat("compressed offset ", flushed + 1, ": invalid block type")));
  }
}

// Random damage after a flush point: the data before the point always comes out whole.
TEST_P(InflateTest, RandomDamageKeepsTheDataBeforeIt) {
  const std::string part1 = RandomText(400'000, 24);
  const std::string part2 = RandomText(400'000, 25);
  std::mt19937 rng(26);
  for (ZlibFormat format : {ZlibFormat::kGzip, ZlibFormat::kZlib}) {
    absl::StatusOr<Deflater> d = Deflater::Create(format);
    ASSERT_TRUE(d.ok());
    std::string good;
    ASSERT_TRUE(d->Compress(Bytes(part1), &good).ok());
    ASSERT_TRUE(d->Flush(&good).ok());
    const size_t flushed = good.size();
    ASSERT_TRUE(d->Compress(Bytes(part2), &good).ok());
    ASSERT_TRUE(d->Finish(&good).ok());
    for (int trial = 0; trial < 20; ++trial) {
      std::string bad = good;
      const size_t at = flushed + rng() % (bad.size() - flushed);
      bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
      absl::Status error;
      const std::string out = InflateUntilError(GetParam(), format, bad, &error);
      EXPECT_FALSE(error.ok()) << "trial " << trial << " at " << at;
      ASSERT_GE(out.size(), part1.size()) << "trial " << trial << " at " << at << ": " << error;
      EXPECT_TRUE(out.compare(0, part1.size(), part1) == 0) << "trial " << trial;
    }
  }
}

TEST_P(InflateTest, TruncatedStreamFailsAtFinish) {
  const std::string data = RandomText(40000, 8);
  for (ZlibFormat format : {ZlibFormat::kGzip, ZlibFormat::kZlib}) {
    const std::string good = Compress(format, data);
    for (size_t cut : {size_t{1}, size_t{3}, good.size() / 2, good.size() - 1}) {
      absl::StatusOr<std::string> out = InflateAll(GetParam(), format, good.substr(0, cut), 100);
      ASSERT_FALSE(out.ok()) << "cut at " << cut;
      EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(out.status().message(), HasSubstr("truncated"));
      EXPECT_THAT(out.status().message(), HasSubstr(absl::StrCat("compressed offset ", cut)));
    }
  }
}

TEST_P(InflateTest, TrailingGarbageIsDataLoss) {
  const std::string data = RandomText(1000, 9);
  const std::string zlib = Compress(ZlibFormat::kZlib, data);
  absl::StatusOr<std::string> out = InflateAll(GetParam(), ZlibFormat::kZlib, zlib + "xyz", 64);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(),
              HasSubstr(absl::StrCat("unexpected data after the end of the ZLIB stream at compressed offset ",
                                     zlib.size())));

  const std::string gz = Compress(ZlibFormat::kGzip, data);
  out = InflateAll(GetParam(), ZlibFormat::kGzip, gz + "garbage!", 64);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr(absl::StrCat("gzip member at compressed offset ", gz.size())));
}

TEST_P(InflateTest, ErrorsAreSticky) {
  Inflater inflater(ZlibFormat::kZlib, "x", kDefaultInflateChunkBytes, GetParam());
  const std::string junk = "\xff\xff\xff\xff";
  inflater.Feed(Bytes(junk));
  absl::StatusOr<std::span<const std::byte>> first = inflater.Next();
  ASSERT_FALSE(first.ok());
  absl::StatusOr<std::span<const std::byte>> second = inflater.Next();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(first.status(), second.status());
  EXPECT_EQ(inflater.Finish(), first.status());
}

TEST_P(InflateTest, OutputIsBoundedByChunkSize) {
  // 10 MB of zeros compress to ~10 KB; output must come out in pieces of at most the chunk size.
  const std::string zeros(10'000'000, '\0');
  const std::string compressed = Compress(ZlibFormat::kGzip, zeros);
  Inflater inflater(ZlibFormat::kGzip, "bomb.gz", 4096, GetParam());
  inflater.Feed(Bytes(compressed));
  size_t total = 0;
  for (int i = 0; i < 100000; ++i) {
    absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
    ASSERT_TRUE(piece.ok()) << piece.status();
    if (piece->empty()) break;
    ASSERT_LE(piece->size(), 4096u);
    total += piece->size();
  }
  EXPECT_EQ(total, zeros.size());
  EXPECT_TRUE(inflater.Finish().ok());
  EXPECT_EQ(inflater.decompressed_bytes(), zeros.size());
  EXPECT_EQ(inflater.compressed_offset(), compressed.size());
}

TEST_P(InflateTest, DeflaterFlushMakesPrefixDecodable) {
  absl::StatusOr<Deflater> d = Deflater::Create(ZlibFormat::kGzip, 1);
  ASSERT_TRUE(d.ok());
  const std::string part1 = RandomText(3000, 10);
  std::string out;
  ASSERT_TRUE(d->Compress(Bytes(part1), &out).ok());
  ASSERT_TRUE(d->Flush(&out).ok());
  // Everything so far decodes, but the stream is not finished.
  absl::StatusOr<std::string> partial = InflateAll(GetParam(), ZlibFormat::kGzip, out, 1 << 20);
  ASSERT_FALSE(partial.ok());
  EXPECT_THAT(partial.status().message(), HasSubstr("truncated"));
  Inflater inflater(ZlibFormat::kGzip, "partial", kDefaultInflateChunkBytes, GetParam());
  inflater.Feed(Bytes(out));
  std::string got;
  for (;;) {
    absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
    ASSERT_TRUE(piece.ok());
    if (piece->empty()) break;
    got.append(reinterpret_cast<const char*>(piece->data()), piece->size());
  }
  EXPECT_EQ(got, part1);
  ASSERT_TRUE(d->Finish(&out).ok());
  EXPECT_FALSE(d->Compress(Bytes(part1), &out).ok());
  absl::StatusOr<std::string> whole = InflateAll(GetParam(), ZlibFormat::kGzip, out, 77);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, part1);
}

TEST(ZlibStreamTest, DeflaterRejectsBadOptions) {
  EXPECT_EQ(Deflater::Create(ZlibFormat::kGzip, 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Deflater::Create(ZlibFormat::kZlib, -2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Deflater::Create(ZlibFormat::kAuto).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Deflater::Create(ZlibFormat::kZlib, 0).ok());
}

TEST_P(InflateTest, MovedInflaterKeepsWorking) {
  const std::string data = RandomText(9000, 11);
  const std::string compressed = Compress(ZlibFormat::kZlib, data);
  Inflater a(ZlibFormat::kZlib, "a", kDefaultInflateChunkBytes, GetParam());
  a.Feed(Bytes(compressed).subspan(0, 100));
  std::string got;
  for (;;) {
    absl::StatusOr<std::span<const std::byte>> piece = a.Next();
    ASSERT_TRUE(piece.ok());
    if (piece->empty()) break;
    got.append(reinterpret_cast<const char*>(piece->data()), piece->size());
  }
  Inflater b = std::move(a);
  b.Feed(Bytes(compressed).subspan(100));
  for (;;) {
    absl::StatusOr<std::span<const std::byte>> piece = b.Next();
    ASSERT_TRUE(piece.ok());
    if (piece->empty()) break;
    got.append(reinterpret_cast<const char*>(piece->data()), piece->size());
  }
  EXPECT_TRUE(b.Finish().ok());
  EXPECT_EQ(got, data);
}

// Found by the TFRecord fuzzer: ISA-L meets this stream's bad distance in its fast loop and leaves its
// input count above what it was given. The error still names an offset inside the stream.
TEST_P(InflateTest, DistanceTooFarBackIsDataLossInsideTheStream) {
  const std::string stream = absl::HexStringToBytes("789ccb401832e762af884fcbc94f2c11d211d2");
  for (size_t chunk : {stream.size(), size_t{7}, size_t{1}}) {
    Inflater inflater(ZlibFormat::kZlib, "far.zlib", kDefaultInflateChunkBytes, GetParam());
    absl::Status error;
    for (size_t pos = 0; pos < stream.size() && error.ok(); pos += chunk) {
      inflater.Feed(Bytes(stream).subspan(pos, std::min(chunk, stream.size() - pos)));
      for (int i = 0; i < 1000; ++i) {
        absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
        if (!piece.ok()) error = piece.status();
        if (!piece.ok() || piece->empty()) break;
      }
    }
    EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << "chunks of " << chunk << ": " << error;
    EXPECT_THAT(error.message(), HasSubstr("invalid distance too far back")) << error;
    EXPECT_LE(inflater.compressed_offset(), stream.size()) << "chunks of " << chunk;
  }
}

TEST(InflateLibraryTest, FastestIsIsalForGzipAndZlibWhenBuiltWithIt) {
  const InflateLibrary fastest = IsalInflateAvailable() ? InflateLibrary::kIsal : InflateLibrary::kZlib;
  EXPECT_EQ(Inflater(ZlibFormat::kGzip, "a").library(), fastest);
  EXPECT_EQ(Inflater(ZlibFormat::kZlib, "a").library(), fastest);
  EXPECT_EQ(Inflater(ZlibFormat::kGzip, "a", 4096, InflateLibrary::kZlib).library(), InflateLibrary::kZlib);
  // ISA-L takes neither autodetection nor raw deflate: zlib serves them.
  EXPECT_EQ(Inflater(ZlibFormat::kAuto, "a", 4096, InflateLibrary::kIsal).library(), InflateLibrary::kZlib);
  EXPECT_EQ(Inflater(ZlibFormat::kRawDeflate, "a", 4096, InflateLibrary::kIsal).library(),
            InflateLibrary::kZlib);
}

// The same hostile streams give the same Status (code and message) from both decoders.
TEST(InflateLibraryTest, BothLibrariesGiveTheSameErrors) {
  if (!IsalInflateAvailable()) GTEST_SKIP() << "built without ISA-L";
  const std::string data = RandomText(200'000, 31);
  const std::string gz = Compress(ZlibFormat::kGzip, data);
  const std::string zl = Compress(ZlibFormat::kZlib, data);
  auto flip = [](std::string s, size_t from_end) {
    s[s.size() - from_end] = static_cast<char>(s[s.size() - from_end] ^ 0x10);
    return s;
  };
  std::vector<std::tuple<ZlibFormat, std::string, std::string>> cases = {
      {ZlibFormat::kGzip, "bad CRC-32", flip(gz, 8)},
      {ZlibFormat::kGzip, "bad ISIZE", flip(gz, 2)},
      {ZlibFormat::kZlib, "bad Adler-32", flip(zl, 1)},
      {ZlibFormat::kGzip, "not gzip", "this is not gzip at all"},
      {ZlibFormat::kGzip, "one byte", "\x1f"},
      {ZlibFormat::kGzip, "garbage after a member", gz + "garbage!"},
      {ZlibFormat::kGzip, "half a magic after a member", gz + "\x1f"},
      {ZlibFormat::kGzip, "magic then nothing", gz + "\x1f\x8b"},
      {ZlibFormat::kZlib, "data after the stream", zl + "xyz"},
  };
  for (const auto& [format, whole] : {std::pair{ZlibFormat::kGzip, gz}, std::pair{ZlibFormat::kZlib, zl}}) {
    for (size_t cut : {size_t{1}, size_t{2}, size_t{9}, size_t{10}, whole.size() / 2, whole.size() - 5,
                       whole.size() - 1}) {
      cases.emplace_back(format, absl::StrCat("cut at ", cut, " of ", whole.size()), whole.substr(0, cut));
    }
  }
  for (const auto& [format, what, input] : cases) {
    for (size_t chunk : {size_t{1} << 20, size_t{7}}) {
      absl::StatusOr<std::string> zlib = InflateAll(InflateLibrary::kZlib, format, input, chunk);
      absl::StatusOr<std::string> isal = InflateAll(InflateLibrary::kIsal, format, input, chunk);
      ASSERT_FALSE(zlib.ok()) << what;
      ASSERT_FALSE(isal.ok()) << what;
      EXPECT_EQ(isal.status().code(), zlib.status().code()) << what;
      // From a truncated stream the two decode all but a few held-back bytes: only that count may differ.
      auto without_count = [](absl::string_view m) {
        return m.substr(0, m.find(" bytes decompressed so far"));
      };
      auto count_start = [](absl::string_view m) { return m.substr(0, m.rfind('(')); };
      if (absl::StrContains(zlib.status().message(), "decompressed so far")) {
        EXPECT_EQ(count_start(isal.status().message()), count_start(zlib.status().message())) << what;
        EXPECT_NE(without_count(isal.status().message()), isal.status().message()) << what;
      } else {
        EXPECT_EQ(isal.status(), zlib.status()) << what << ", chunks of " << chunk;
      }
    }
  }
}

}  // namespace
}  // namespace zlib_stream_test_file
}  // namespace sluice::io
