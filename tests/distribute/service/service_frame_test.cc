#include "distribute/service/frame.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace sluice::service {
namespace service_frame_test_file {
namespace {

// Feeds `bytes` in chunks of `chunk` and collects every frame; the final status is the decoder's.
absl::Status DecodeAll(const std::string& bytes, size_t chunk, std::vector<Frame>* out,
                       FrameDecoder* decoder) {
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    decoder->Feed(std::string_view(bytes).substr(i, chunk));
    while (true) {
      absl::StatusOr<std::optional<Frame>> frame = decoder->Next();
      if (!frame.ok()) return frame.status();
      if (!frame->has_value()) break;
      out->push_back(std::move(**frame));
    }
  }
  return absl::OkStatus();
}

std::string Header(uint8_t version, uint8_t kind, uint16_t flags, uint32_t length, uint64_t call_id) {
  std::string h = "SLSV";
  h.push_back(static_cast<char>(version));
  h.push_back(static_cast<char>(kind));
  for (int i = 0; i < 2; ++i) h.push_back(static_cast<char>(flags >> (8 * i)));
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(length >> (8 * i)));
  for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>(call_id >> (8 * i)));
  return h;
}

TEST(FrameTest, HeaderIsLittleEndianAtFixedOffsets) {
  const std::string bytes = EncodeFrame({FrameKind::kGetElements, 0, 0x0102030405060708ull, "abc"});
  ASSERT_EQ(bytes.size(), kFrameHeaderSize + 3);
  EXPECT_EQ(bytes.substr(0, kFrameHeaderSize), Header(1, 18, 0, 3, 0x0102030405060708ull));
  EXPECT_EQ(bytes.substr(kFrameHeaderSize), "abc");
}

TEST(FrameTest, RoundTripsEveryChunkSize) {
  std::string stream;
  const std::vector<Frame> sent = {
      {FrameKind::kPing, 0, 1, ""},
      {FrameKind::kGetOrCreateJob, 0, 2, std::string(1000, 'x')},
      {FrameKind::kResponse, 0, UINT64_MAX, "answer"},
      {FrameKind::kError, 0, 0, std::string("\0\1\2", 3)},
      {FrameKind::kCancel, 0, 7, ""},
  };
  for (const Frame& f : sent) stream += EncodeFrame(f);
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{7}, size_t{19}, size_t{20}, size_t{21}, stream.size()}) {
    SCOPED_TRACE(chunk);
    FrameDecoder decoder;
    std::vector<Frame> got;
    ASSERT_TRUE(DecodeAll(stream, chunk, &got, &decoder).ok());
    ASSERT_EQ(got.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(got[i].kind, sent[i].kind);
      EXPECT_EQ(got[i].call_id, sent[i].call_id);
      EXPECT_EQ(got[i].payload, sent[i].payload);
    }
    EXPECT_EQ(decoder.buffered(), 0u);
    EXPECT_EQ(decoder.stream_offset(), stream.size());
  }
}

TEST(FrameTest, EveryTruncationWaitsForMoreBytes) {
  const std::string bytes = EncodeFrame({FrameKind::kPing, 0, 9, "payload"});
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    FrameDecoder decoder;
    decoder.Feed(std::string_view(bytes).substr(0, n));
    absl::StatusOr<std::optional<Frame>> frame = decoder.Next();
    ASSERT_TRUE(frame.ok()) << frame.status();
    EXPECT_FALSE(frame->has_value());
    EXPECT_EQ(decoder.buffered(), n);
    // The rest completes it.
    decoder.Feed(std::string_view(bytes).substr(n));
    frame = decoder.Next();
    ASSERT_TRUE(frame.ok() && frame->has_value());
    EXPECT_EQ((*frame)->payload, "payload");
  }
}

absl::Status FirstError(const std::string& bytes, uint32_t limit = kDefaultMaxPayloadBytes) {
  FrameDecoder decoder(limit);
  std::vector<Frame> ignored;
  return DecodeAll(bytes, bytes.size(), &ignored, &decoder);
}

TEST(FrameTest, BadMagicIsRefusedFromItsFirstByte) {
  absl::Status s = FirstError("GET / HTTP/1.1\r\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bad magic"), std::string::npos) << s;
  EXPECT_EQ(FirstError("X").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FirstError("SLSX").code(), absl::StatusCode::kInvalidArgument);
}

TEST(FrameTest, HostileHeadersAreRefusedNamingTheField) {
  struct Case {
    std::string bytes;
    absl::StatusCode code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {Header(0, 16, 0, 0, 1), absl::StatusCode::kInvalidArgument, "protocol version 0"},
      {Header(2, 16, 0, 0, 1), absl::StatusCode::kInvalidArgument, "protocol version 2"},
      {Header(1, 0, 0, 0, 1), absl::StatusCode::kInvalidArgument, "unknown kind 0"},
      {Header(1, 4, 0, 0, 1), absl::StatusCode::kInvalidArgument, "unknown kind 4"},
      {Header(1, 255, 0, 0, 1), absl::StatusCode::kInvalidArgument, "unknown kind 255"},
      {Header(1, 16, 1, 0, 1), absl::StatusCode::kInvalidArgument, "unknown flags 0x0001"},
      {Header(1, 16, 0x8000, 0, 1), absl::StatusCode::kInvalidArgument, "unknown flags 0x8000"},
      {Header(1, 16, 0, UINT32_MAX, 1), absl::StatusCode::kResourceExhausted, "4294967295 bytes exceeds"},
      {Header(1, 16, 0, kDefaultMaxPayloadBytes + 1, 1), absl::StatusCode::kResourceExhausted,
       "exceeds the limit"},
  };
  for (const Case& c : cases) {
    absl::Status s = FirstError(c.bytes);
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s;
  }
}

TEST(FrameTest, LimitIsConfigurableAndExact) {
  EXPECT_TRUE(FirstError(EncodeFrame({FrameKind::kPing, 0, 1, std::string(100, 'a')}), 100).ok());
  absl::Status s = FirstError(EncodeFrame({FrameKind::kPing, 0, 1, std::string(101, 'a')}), 100);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

TEST(FrameTest, OversizeIsRefusedFromTheHeaderAloneWithoutBuffering) {
  // Only the header is sent: the decoder must refuse it without waiting for (or reserving) 4 GiB.
  FrameDecoder decoder;
  decoder.Feed(Header(1, 16, 0, UINT32_MAX, 1));
  absl::StatusOr<std::optional<Frame>> frame = decoder.Next();
  EXPECT_EQ(frame.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(FrameTest, ErrorsAreStickyAndNameTheStreamOffset) {
  FrameDecoder decoder;
  std::string bytes = EncodeFrame({FrameKind::kPing, 0, 1, "ok"});
  const size_t first = bytes.size();
  bytes += Header(9, 16, 0, 0, 2);
  std::vector<Frame> got;
  absl::Status s = DecodeAll(bytes, bytes.size(), &got, &decoder);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(s.message().find("stream offset " + std::to_string(first)), std::string::npos) << s;
  // A good frame afterwards does not resynchronise a stream that lost its framing.
  decoder.Feed(EncodeFrame({FrameKind::kPing, 0, 3, ""}));
  EXPECT_EQ(decoder.Next().status(), s);
}

TEST(FrameTest, KindsAreClassified) {
  EXPECT_TRUE(IsRequestKind(FrameKind::kPing));
  EXPECT_TRUE(IsRequestKind(FrameKind::kGetOrCreateJob));
  EXPECT_TRUE(IsRequestKind(FrameKind::kGetElements));
  EXPECT_FALSE(IsRequestKind(FrameKind::kResponse));
  EXPECT_FALSE(IsRequestKind(FrameKind::kError));
  EXPECT_FALSE(IsRequestKind(FrameKind::kCancel));
  EXPECT_FALSE(IsRequestKind(static_cast<FrameKind>(200)));
  EXPECT_STREQ(FrameKindName(FrameKind::kGetElements), "get_elements");
}

}  // namespace
}  // namespace service_frame_test_file
}  // namespace sluice::service
