#include "distribute/service/frame.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::service {
namespace {

// Explicit byte order, so that the wire format does not depend on the host's.
void PutLe(char* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return value;
}

}  // namespace

bool IsKnownFrameKind(uint8_t kind) {
  switch (static_cast<FrameKind>(kind)) {
    case FrameKind::kResponse:
    case FrameKind::kError:
    case FrameKind::kCancel:
    case FrameKind::kPing:
    case FrameKind::kGetOrCreateJob:
    case FrameKind::kGetElements:
    case FrameKind::kRegisterWorker:
    case FrameKind::kWorkerHeartbeat:
    case FrameKind::kGetSplit:
    case FrameKind::kClientHeartbeat:
    case FrameKind::kAgreementRound:
    case FrameKind::kAgreementAbandon:
      return true;
  }
  return false;
}

bool IsRequestKind(FrameKind kind) {
  return static_cast<uint8_t>(kind) >= 16 && IsKnownFrameKind(static_cast<uint8_t>(kind));
}

const char* FrameKindName(FrameKind kind) {
  switch (kind) {
    case FrameKind::kResponse:
      return "response";
    case FrameKind::kError:
      return "error";
    case FrameKind::kCancel:
      return "cancel";
    case FrameKind::kPing:
      return "ping";
    case FrameKind::kGetOrCreateJob:
      return "get_or_create_job";
    case FrameKind::kGetElements:
      return "get_elements";
    case FrameKind::kRegisterWorker:
      return "register_worker";
    case FrameKind::kWorkerHeartbeat:
      return "worker_heartbeat";
    case FrameKind::kGetSplit:
      return "get_split";
    case FrameKind::kClientHeartbeat:
      return "client_heartbeat";
    case FrameKind::kAgreementRound:
      return "agreement_round";
    case FrameKind::kAgreementAbandon:
      return "agreement_abandon";
  }
  return "unknown";
}

void AppendFrame(std::string* out, FrameKind kind, uint64_t call_id, std::string_view payload,
                 uint16_t flags) {
  char header[kFrameHeaderSize];
  std::memcpy(header, kFrameMagic, 4);
  header[4] = static_cast<char>(kProtocolVersion);
  header[5] = static_cast<char>(kind);
  PutLe(header + 6, flags, 2);
  PutLe(header + 8, static_cast<uint32_t>(payload.size()), 4);
  PutLe(header + 12, call_id, 8);
  out->reserve(out->size() + kFrameHeaderSize + payload.size());
  out->append(header, kFrameHeaderSize);
  out->append(payload.data(), payload.size());
}

std::string EncodeFrame(const Frame& frame) {
  std::string out;
  AppendFrame(&out, frame.kind, frame.call_id, frame.payload, frame.flags);
  return out;
}

void FrameDecoder::Feed(std::string_view bytes) {
  if (!error_.ok() || bytes.empty()) return;
  // Drop returned frames first, so the buffer holds at most one partial frame plus this chunk.
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
}

absl::Status FrameDecoder::Fail(absl::Status status) {
  error_ = std::move(status);
  buffer_.clear();
  buffer_.shrink_to_fit();
  consumed_ = 0;
  return error_;
}

absl::StatusOr<std::optional<Frame>> FrameDecoder::Next() {
  if (!error_.ok()) return error_;
  const char* p = buffer_.data() + consumed_;
  const size_t available = buffered();
  // The magic is checked as soon as its bytes arrive, so a peer speaking another protocol is refused
  // without waiting for a whole header it may never send.
  const size_t magic_bytes = available < 4 ? available : 4;
  if (std::memcmp(p, kFrameMagic, magic_bytes) != 0) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("service frame at stream offset ", stream_offset_, ": bad magic (expected \"SLSV\")")));
  }
  if (available < kFrameHeaderSize) return std::nullopt;
  const uint8_t version = static_cast<uint8_t>(p[4]);
  const uint8_t kind = static_cast<uint8_t>(p[5]);
  const uint16_t flags = static_cast<uint16_t>(GetLe(p + 6, 2));
  const uint32_t length = static_cast<uint32_t>(GetLe(p + 8, 4));
  const uint64_t call_id = GetLe(p + 12, 8);
  if (version != kProtocolVersion) {
    return Fail(absl::InvalidArgumentError(
        absl::StrFormat("service frame at stream offset %d: protocol version %d, this build speaks %d",
                        stream_offset_, version, kProtocolVersion)));
  }
  if (!IsKnownFrameKind(kind)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrFormat("service frame at stream offset %d: unknown kind %d", stream_offset_, kind)));
  }
  if ((flags & ~kKnownFrameFlags) != 0) {
    return Fail(absl::InvalidArgumentError(
        absl::StrFormat("service frame at stream offset %d: unknown flags 0x%04x", stream_offset_, flags)));
  }
  // Checked before a byte of payload is buffered or reserved.
  if (length > max_payload_bytes_) {
    return Fail(absl::ResourceExhaustedError(absl::StrFormat(
        "service frame at stream offset %d: payload of %d bytes exceeds the limit of %d bytes",
        stream_offset_, length, max_payload_bytes_)));
  }
  if (available - kFrameHeaderSize < length) {
    // Reserve the (limit-checked) frame once rather than growing the buffer chunk by chunk.
    buffer_.reserve(consumed_ + kFrameHeaderSize + length);
    return std::nullopt;
  }
  Frame frame;
  frame.kind = static_cast<FrameKind>(kind);
  frame.flags = flags;
  frame.call_id = call_id;
  frame.payload.assign(p + kFrameHeaderSize, length);
  consumed_ += kFrameHeaderSize + length;
  stream_offset_ += kFrameHeaderSize + length;
  return std::optional<Frame>(std::move(frame));
}

}  // namespace sluice::service
