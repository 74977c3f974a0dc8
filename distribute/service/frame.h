// Internal: the data service's frame, the unit every message crosses the wire in.
//
// Contract:
// - A frame is a 20-byte little-endian header followed by `length` payload bytes:
//     magic "SLSV" (4) | version u8 | kind u8 | flags u16 | length u32 | call id u64
//   docs/service.md has the table. Requests are matched to their response, error or cancel by call id,
//   so one connection carries many calls at once.
// - EncodeFrame writes header and payload; it never fails for payloads below 4 GiB (callers keep
//   payloads under the peer's limit, else the peer refuses the frame and closes the connection).
// - FrameDecoder takes bytes in chunks of any size and yields whole frames. Bad magic, an unknown version,
//   kind or flag, or a length above `max_payload_bytes` fail with InvalidArgument/ResourceExhausted naming
//   the field, before the payload is buffered or allocated. A failure is sticky: the stream has lost its
//   framing, so the only sound reaction is to close the connection.
// - Threading: a decoder belongs to one thread (the network thread of its connection).
//
//   FrameDecoder decoder;
//   decoder.Feed(bytes_just_read);
//   while (true) {
//     absl::StatusOr<std::optional<Frame>> frame = decoder.Next();
//     if (!frame.ok()) return Close(frame.status());
//     if (!frame->has_value()) break;  // need more bytes
//     Dispatch(std::move(**frame));
//   }
#ifndef SLUICE_DISTRIBUTE_SERVICE_FRAME_H_
#define SLUICE_DISTRIBUTE_SERVICE_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::service {

inline constexpr char kFrameMagic[4] = {'S', 'L', 'S', 'V'};
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderSize = 20;
inline constexpr uint32_t kDefaultMaxPayloadBytes = 64u << 20;

// Kinds below 16 are the transport's own; 16 and up are requests, one per method.
enum class FrameKind : uint8_t {
  kResponse = 1,  // the successful answer to the request with the same call id
  kError = 2,     // the failed answer: payload is an ErrorPayload (messages.h)
  kCancel = 3,    // client -> server: the caller no longer wants the answer to this call id
  kPing = 16,     // request: answered with its own payload (liveness, tests)
  kGetOrCreateJob = 17,
  kGetElements = 18,
  kRegisterWorker = 19,
  kWorkerHeartbeat = 20,
  kGetSplit = 21,
  kClientHeartbeat = 22,
  kAgreementRound = 23,    // a multi-worker trainer's end-of-data agreement (WorkerAgreement), one step
  kAgreementAbandon = 24,  // a trainer leaves an epoch of it
};

bool IsKnownFrameKind(uint8_t kind);
bool IsRequestKind(FrameKind kind);
const char* FrameKindName(FrameKind kind);

// No flag is defined yet; bit 0 is reserved for compressed payloads. Unknown bits are refused so that a
// newer peer's meaning is never silently ignored.
inline constexpr uint16_t kKnownFrameFlags = 0;

struct Frame {
  FrameKind kind = FrameKind::kPing;
  uint16_t flags = 0;
  uint64_t call_id = 0;
  std::string payload;
};

// Appends header and payload to `out`. The payload must be below 4 GiB.
void AppendFrame(std::string* out, FrameKind kind, uint64_t call_id, std::string_view payload,
                 uint16_t flags = 0);
std::string EncodeFrame(const Frame& frame);

class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_payload_bytes = kDefaultMaxPayloadBytes)
      : max_payload_bytes_(max_payload_bytes) {}

  // Buffers `bytes`. Nothing is checked here; Next() reports problems.
  void Feed(std::string_view bytes);
  // The next whole frame, nullopt when more bytes are needed, or the (sticky) framing error.
  absl::StatusOr<std::optional<Frame>> Next();

  // Bytes received but not yet returned as a frame (a partial frame at the end of a stream).
  size_t buffered() const { return buffer_.size() - consumed_; }
  // Total bytes consumed by returned frames; error messages give offsets in this stream.
  uint64_t stream_offset() const { return stream_offset_; }

 private:
  absl::Status Fail(absl::Status status);

  uint32_t max_payload_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;  // bytes at the front of buffer_ already returned
  uint64_t stream_offset_ = 0;
  absl::Status error_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_FRAME_H_
