#include "io/zlib_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/memory_limit.h"

namespace sluice::io {
namespace {

absl::string_view FormatName(ZlibFormat format) {
  switch (format) {
    case ZlibFormat::kGzip:
      return "GZIP";
    case ZlibFormat::kZlib:
      return "ZLIB";
    case ZlibFormat::kAuto:
      return "GZIP/ZLIB";
    case ZlibFormat::kRawDeflate:
      return "raw deflate";
  }
  return "?";
}

// The Deflater writes GZIP or ZLIB only (Create() checks).
int DeflateWindowBits(ZlibFormat format) { return format == ZlibFormat::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

// zlib and ISA-L count in 32 bits; larger spans are handed over in pieces.
constexpr size_t kMaxZlibSpan = size_t{1} << 30;

// SLUICE_INFLATE=zlib: kFastest means zlib (read once).
bool ZlibForcedByEnvironment() {
  static const bool forced = [] {
    const char* v = std::getenv("SLUICE_INFLATE");
    return v != nullptr && absl::string_view(v) == "zlib";
  }();
  return forced;
}

}  // namespace

Inflater::Inflater(ZlibFormat format, std::string name, size_t output_chunk_bytes, InflateLibrary library)
    : format_(format), name_(std::move(name)), output_size_(std::max<size_t>(output_chunk_bytes, 64)) {
  const bool want_isal =
      library == InflateLibrary::kIsal || (library == InflateLibrary::kFastest && !ZlibForcedByEnvironment());
  if (want_isal) engine_ = MakeIsalInflateEngine(format);
  library_ = engine_ != nullptr ? InflateLibrary::kIsal : InflateLibrary::kZlib;
  if (engine_ == nullptr) engine_ = MakeZlibInflateEngine(format);
}

Inflater::Inflater(Inflater&&) noexcept = default;
Inflater& Inflater::operator=(Inflater&&) noexcept = default;
Inflater::~Inflater() = default;

absl::Status Inflater::Error(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(name_, ": ", what));
}

absl::Status Inflater::Init() {
  // Allocated here, not in the constructor, so that running out of memory is a Status naming the file.
  if (output_ == nullptr) {
    output_ = TryAllocateBytes(output_size_);
    if (output_ == nullptr) return OutOfMemory(name_, consumed_, "inflating", output_size_, "its output buffer");
  }
  if (absl::Status s = engine_->Init(); !s.ok())
    return absl::Status(s.code(), absl::StrCat(name_, ": ", s.message()));
  initialized_ = true;
  return absl::OkStatus();
}

void Inflater::Feed(std::span<const std::byte> chunk) { input_ = chunk; }

absl::StatusOr<std::span<const std::byte>> Inflater::Next() {
  if (!status_.ok()) return status_;
  if (!initialized_) {
    status_ = Init();
    if (!status_.ok()) return status_;
  }
  // A decoder may hold decoded bytes beyond a full output buffer (ISA-L reads ahead into a bit buffer),
  // so a call after a full buffer goes on even when all input is taken.
  while (!input_.empty() || output_was_full_) {
    if (!input_.empty() && !in_stream_ && ended_once_ && format_ != ZlibFormat::kGzip &&
        format_ != ZlibFormat::kAuto) {
      status_ = Error(absl::StrCat("unexpected data after the end of the ", FormatName(format_),
                                   " stream at compressed offset ", consumed_));
      return status_;
    }
    const bool starts_member = !in_stream_ && ended_once_;
    in_stream_ = in_stream_ || !input_.empty();
    const uint64_t start = consumed_;
    const size_t out_capacity = std::min(output_size_, kMaxZlibSpan);
    const InflateStep step = engine_->Step(input_.first(std::min(input_.size(), kMaxZlibSpan)),
                                           std::span<std::byte>(output_.get(), out_capacity));
    consumed_ += step.used;
    produced_ += step.produced;
    input_ = input_.subspan(step.used);
    output_was_full_ = step.outcome == InflateOutcome::kProgress && step.produced == out_capacity;
    // Where the damage begins: decoders read ahead into a bit buffer.
    const uint64_t damage_at = consumed_ >= step.back ? consumed_ - step.back : 0;
    switch (step.outcome) {
      case InflateOutcome::kStreamEnd:
        in_stream_ = false;
        ended_once_ = true;
        engine_->Reset();
        break;
      case InflateOutcome::kProgress:
        break;
      case InflateOutcome::kNoProgress:
        // No progress with input and output space available cannot happen on a healthy stream.
        status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                     consumed_, ": inflate made no progress"));
        break;
      case InflateOutcome::kNeedDict:
        status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                     consumed_, ": it needs a preset dictionary"));
        break;
      case InflateOutcome::kOutOfMemory:
        status_ = absl::ResourceExhaustedError(
            absl::StrCat(name_, ": out of memory while inflating at compressed offset ", consumed_));
        break;
      case InflateOutcome::kCorrupt:
        if (starts_member) {
          status_ = Error(absl::StrCat("data after the end of a gzip member at compressed offset ", start,
                                       " is not another gzip member: ", step.detail));
        } else if (step.trailer) {
          status_ = Error(absl::StrCat(
              "corrupt ", FormatName(format_), " stream at compressed offset ", damage_at, ": ", step.detail,
              " (the stream's trailer disagrees with the ", produced_, " bytes decompressed)"));
        } else {
          status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                       damage_at, ": ", step.detail));
        }
        break;
    }
    // What the failing call decompressed before the damage is good data (a bad trailer CRC fails only
    // after the whole stream came out): hand it out first; the error comes with the next call.
    if (step.produced != 0) return std::span<const std::byte>(output_.get(), step.produced);
    if (!status_.ok()) return status_;
  }
  return std::span<const std::byte>();
}

absl::Status Inflater::Finish() {
  if (!status_.ok()) return status_;
  if (!input_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name_, ": Inflater::Finish called before Next() consumed the input"));
  }
  if (in_stream_) {
    status_ = Error(absl::StrCat("truncated ", FormatName(format_), " stream: the input ends at compressed offset ",
                                 consumed_, " inside the stream (", produced_,
                                 " bytes decompressed so far)"));
    return status_;
  }
  return absl::OkStatus();
}

absl::StatusOr<Deflater> Deflater::Create(ZlibFormat format, int level) {
  if (format != ZlibFormat::kGzip && format != ZlibFormat::kZlib) {
    return absl::InvalidArgumentError(
        absl::StrCat("Deflater: format must be GZIP or ZLIB, got ", FormatName(format)));
  }
  if (level < -1 || level > 9) {
    return absl::InvalidArgumentError(absl::StrCat("Deflater: compression level must be -1..9, got ", level));
  }
  Deflater d;
  d.stream_ = std::make_unique<z_stream>();
  const int rc =
      deflateInit2(d.stream_.get(), level, Z_DEFLATED, DeflateWindowBits(format), 8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    d.stream_.reset();
    return absl::InternalError(absl::StrCat("Deflater: deflateInit2 failed: ", rc));
  }
  return d;
}

Deflater::Deflater(Deflater&&) noexcept = default;
Deflater& Deflater::operator=(Deflater&& other) noexcept {
  if (this != &other) {
    if (stream_) deflateEnd(stream_.get());
    stream_ = std::move(other.stream_);
    finished_ = other.finished_;
  }
  return *this;
}

Deflater::~Deflater() {
  if (stream_) deflateEnd(stream_.get());
}

absl::Status Deflater::Run(std::span<const std::byte> data, int flush, std::string* out) {
  if (!stream_) return absl::FailedPreconditionError("Deflater: used after move");
  if (finished_) return absl::FailedPreconditionError("Deflater: used after Finish()");
  z_stream& s = *stream_;
  constexpr size_t kOutStep = size_t{64} << 10;
  for (;;) {
    const size_t in_n = std::min(data.size(), kMaxZlibSpan);
    const bool last_piece = in_n == data.size();
    s.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(data.data()));
    s.avail_in = static_cast<uInt>(in_n);
    const int piece_flush = last_piece ? flush : Z_NO_FLUSH;
    int rc;
    do {
      const size_t old = out->size();
      out->resize(old + kOutStep);
      s.next_out = reinterpret_cast<Bytef*>(out->data() + old);
      s.avail_out = static_cast<uInt>(kOutStep);
      rc = deflate(&s, piece_flush);
      out->resize(old + kOutStep - s.avail_out);
      if (rc == Z_STREAM_ERROR) return absl::InternalError("Deflater: deflate failed (stream error)");
    } while (s.avail_out == 0 || s.avail_in != 0 || (piece_flush == Z_FINISH && rc != Z_STREAM_END));
    data = data.subspan(in_n);
    if (last_piece) break;
  }
  if (flush == Z_FINISH) finished_ = true;
  return absl::OkStatus();
}

absl::Status Deflater::Compress(std::span<const std::byte> data, std::string* out) {
  if (data.empty()) return absl::OkStatus();
  return Run(data, Z_NO_FLUSH, out);
}

absl::Status Deflater::Flush(std::string* out) { return Run({}, Z_SYNC_FLUSH, out); }

absl::Status Deflater::Finish(std::string* out) { return Run({}, Z_FINISH, out); }

}  // namespace sluice::io
