#include "io/zlib_stream.h"

#include <zlib.h>

#include <algorithm>
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

int WindowBits(ZlibFormat format) {
  switch (format) {
    case ZlibFormat::kGzip:
      return MAX_WBITS + 16;
    case ZlibFormat::kZlib:
      return MAX_WBITS;
    case ZlibFormat::kAuto:
      return MAX_WBITS + 32;
    case ZlibFormat::kRawDeflate:
      return -MAX_WBITS;
  }
  return MAX_WBITS;
}

// zlib counts in uInt; larger spans are handed over in pieces.
constexpr size_t kMaxZlibSpan = size_t{1} << 30;

}  // namespace

Inflater::Inflater(ZlibFormat format, std::string name, size_t output_chunk_bytes)
    : format_(format),
      name_(std::move(name)),
      stream_(std::make_unique<z_stream>()),
      output_size_(std::max<size_t>(output_chunk_bytes, 64)) {}

Inflater::Inflater(Inflater&&) noexcept = default;
Inflater& Inflater::operator=(Inflater&& other) noexcept {
  if (this != &other) {
    if (stream_ && initialized_) inflateEnd(stream_.get());
    format_ = other.format_;
    name_ = std::move(other.name_);
    stream_ = std::move(other.stream_);
    initialized_ = std::exchange(other.initialized_, false);
    in_stream_ = other.in_stream_;
    ended_once_ = other.ended_once_;
    input_ = other.input_;
    output_ = std::move(other.output_);
    output_size_ = other.output_size_;
    consumed_ = other.consumed_;
    produced_ = other.produced_;
    status_ = std::move(other.status_);
  }
  return *this;
}

Inflater::~Inflater() {
  if (stream_ && initialized_) inflateEnd(stream_.get());
}

absl::Status Inflater::Error(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(name_, ": ", what));
}

absl::Status Inflater::Init() {
  // Allocated here, not in the constructor, so that running out of memory is a Status naming the file.
  if (output_ == nullptr) {
    output_ = TryAllocateBytes(output_size_);
    if (output_ == nullptr) return OutOfMemory(name_, consumed_, "inflating", output_size_, "its output buffer");
  }
  *stream_ = z_stream{};
  const int rc = inflateInit2(stream_.get(), WindowBits(format_));
  if (rc != Z_OK) {
    return rc == Z_MEM_ERROR ? absl::ResourceExhaustedError(absl::StrCat(name_, ": out of memory in inflateInit"))
                             : absl::InternalError(absl::StrCat(name_, ": inflateInit2 failed: ", rc));
  }
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
  z_stream& s = *stream_;
  while (!input_.empty()) {
    if (!in_stream_ && ended_once_ && format_ != ZlibFormat::kGzip && format_ != ZlibFormat::kAuto) {
      status_ = Error(absl::StrCat("unexpected data after the end of the ", FormatName(format_),
                                   " stream at compressed offset ", consumed_));
      return status_;
    }
    const bool starts_member = !in_stream_ && ended_once_;
    in_stream_ = true;
    const size_t in_n = std::min(input_.size(), kMaxZlibSpan);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input_.data()));
    s.avail_in = static_cast<uInt>(in_n);
    s.next_out = reinterpret_cast<Bytef*>(output_.get());
    s.avail_out = static_cast<uInt>(std::min(output_size_, kMaxZlibSpan));
    const uint64_t start = consumed_;
    const int rc = inflate(&s, Z_NO_FLUSH);
    const size_t used = in_n - s.avail_in;
    const size_t out_n = std::min(output_size_, kMaxZlibSpan) - s.avail_out;
    consumed_ += used;
    produced_ += out_n;
    input_ = input_.subspan(used);
    switch (rc) {
      case Z_STREAM_END:
        in_stream_ = false;
        ended_once_ = true;
        inflateReset(&s);
        break;
      case Z_OK:
        break;
      case Z_BUF_ERROR:
        // No progress with input and output space available cannot happen on a healthy stream.
        if (used == 0 && out_n == 0) {
          status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                       consumed_, ": inflate made no progress"));
        }
        break;
      case Z_NEED_DICT:
        status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                     consumed_, ": it needs a preset dictionary"));
        break;
      case Z_MEM_ERROR:
        status_ = absl::ResourceExhaustedError(
            absl::StrCat(name_, ": out of memory while inflating at compressed offset ", consumed_));
        break;
      default: {
        const char* msg = s.msg != nullptr ? s.msg : "unknown zlib error";
        if (starts_member) {
          status_ = Error(absl::StrCat("data after the end of a gzip member at compressed offset ", start,
                                       " is not another gzip member: ", msg));
        } else if (const absl::string_view m(msg); m == "incorrect data check" || m == "incorrect length check") {
          // zlib has just read the 4-byte trailer field that disagrees with the data: name where it starts.
          status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                       consumed_ >= 4 ? consumed_ - 4 : consumed_, ": ", msg,
                                       " (the stream's trailer disagrees with the ", produced_,
                                       " bytes decompressed)"));
        } else {
          status_ = Error(absl::StrCat("corrupt ", FormatName(format_), " stream at compressed offset ",
                                       consumed_, ": ", msg));
        }
        break;
      }
    }
    // What the failing call decompressed before the damage is good data (a bad trailer CRC fails only
    // after the whole stream came out): hand it out first; the error comes with the next call.
    if (out_n != 0) return std::span<const std::byte>(output_.get(), out_n);
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
  const int rc = deflateInit2(d.stream_.get(), level, Z_DEFLATED, WindowBits(format), 8, Z_DEFAULT_STRATEGY);
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
