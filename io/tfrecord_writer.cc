#include "io/tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "io/tfrecord_format.h"

namespace sluice {

absl::StatusOr<Compression> ParseCompression(absl::string_view name) {
  if (name.empty() || absl::EqualsIgnoreCase(name, "NONE")) return Compression::kNone;
  if (absl::EqualsIgnoreCase(name, "GZIP")) return Compression::kGzip;
  if (absl::EqualsIgnoreCase(name, "ZLIB")) return Compression::kZlib;
  return absl::InvalidArgumentError(absl::StrCat("unknown TFRecord compression type \"", name,
                                                 "\" (expected \"\", NONE, GZIP or ZLIB, in any case)"));
}

absl::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "";
    case Compression::kGzip:
      return "GZIP";
    case Compression::kZlib:
      return "ZLIB";
  }
  return "?";
}

namespace io {

// Records up to this size are framed in scratch_ and deflated in one call; larger ones go in three
// calls to avoid copying them.
constexpr size_t kSmallRecordBytes = size_t{64} << 10;

absl::StatusOr<TFRecordBufferWriter> TFRecordBufferWriter::Create(Compression compression,
                                                                  int compression_level) {
  TFRecordBufferWriter writer(compression);
  if (compression != Compression::kNone) {
    absl::StatusOr<Deflater> deflater = Deflater::Create(
        compression == Compression::kGzip ? ZlibFormat::kGzip : ZlibFormat::kZlib, compression_level);
    if (!deflater.ok()) return deflater.status();
    writer.deflater_.emplace(*std::move(deflater));
  } else if (compression_level < -1 || compression_level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("TFRecord writer: compression level must be -1..9, got ", compression_level));
  }
  return writer;
}

absl::Status TFRecordBufferWriter::Write(std::span<const std::byte> record) {
  if (finished_) return absl::FailedPreconditionError("TFRecord writer: Write() after Finish()");
  if (!deflater_) {
    AppendTFRecord(record, &output_);
  } else if (record.size() <= kSmallRecordBytes) {
    scratch_.clear();
    AppendTFRecord(record, &scratch_);
    if (absl::Status s = deflater_->Compress(AsBytes(scratch_), &output_); !s.ok()) return s;
  } else {
    std::byte header[kTFRecordHeaderBytes];
    std::byte footer[kTFRecordFooterBytes];
    EncodeTFRecordHeader(record.size(), header);
    EncodeTFRecordFooter(record, footer);
    if (absl::Status s = deflater_->Compress(header, &output_); !s.ok()) return s;
    if (absl::Status s = deflater_->Compress(record, &output_); !s.ok()) return s;
    if (absl::Status s = deflater_->Compress(footer, &output_); !s.ok()) return s;
  }
  ++records_written_;
  return absl::OkStatus();
}

absl::Status TFRecordBufferWriter::Write(absl::string_view record) { return Write(AsBytes(record)); }

absl::Status TFRecordBufferWriter::Flush() {
  if (finished_ || !deflater_) return absl::OkStatus();
  return deflater_->Flush(&output_);
}

absl::Status TFRecordBufferWriter::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  if (!deflater_) return absl::OkStatus();
  return deflater_->Finish(&output_);
}

std::string TFRecordBufferWriter::TakeOutput() {
  std::string out = std::move(output_);
  output_.clear();
  return out;
}

absl::StatusOr<std::string> EncodeTFRecords(std::span<const std::string> records, Compression compression,
                                            int compression_level) {
  absl::StatusOr<TFRecordBufferWriter> writer = TFRecordBufferWriter::Create(compression, compression_level);
  if (!writer.ok()) return writer.status();
  for (const std::string& r : records) {
    if (absl::Status s = writer->Write(absl::string_view(r)); !s.ok()) return s;
  }
  if (absl::Status s = writer->Finish(); !s.ok()) return s;
  return writer->TakeOutput();
}

}  // namespace io

class TFRecordWriter::Impl {
 public:
  Impl(std::string path, int fd, io::TFRecordBufferWriter writer, size_t buffer_bytes)
      : path_(std::move(path)), fd_(fd), writer_(std::move(writer)), buffer_bytes_(buffer_bytes) {}

  ~Impl() {
    if (fd_ >= 0) (void)Close();
  }

  absl::Status Write(std::span<const std::byte> record) {
    if (!status_.ok()) return status_;
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": TFRecordWriter is closed"));
    if (absl::Status s = writer_.Write(record); !s.ok()) return Fail(std::move(s));
    if (writer_.output().size() >= buffer_bytes_) return Drain();
    return absl::OkStatus();
  }

  absl::Status Flush() {
    if (!status_.ok()) return status_;
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": TFRecordWriter is closed"));
    if (absl::Status s = writer_.Flush(); !s.ok()) return Fail(std::move(s));
    return Drain();
  }

  absl::Status Close() {
    if (fd_ < 0) return status_;
    if (status_.ok()) {
      if (absl::Status s = writer_.Finish(); !s.ok()) {
        (void)Fail(std::move(s));
      } else {
        (void)Drain();
      }
    }
    if (::close(fd_) != 0 && status_.ok()) {
      status_ = absl::ErrnoToStatus(errno, absl::StrCat(path_, ": close failed"));
    }
    fd_ = -1;
    return status_;
  }

  const std::string& path() const { return path_; }
  uint64_t records_written() const { return writer_.records_written(); }

 private:
  absl::Status Fail(absl::Status s) {
    status_ = absl::Status(s.code(), absl::StrCat(path_, ": ", s.message()));
    return status_;
  }

  absl::Status Drain() {
    std::string bytes = writer_.TakeOutput();
    const char* p = bytes.data();
    size_t left = bytes.size();
    while (left != 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        status_ = absl::ErrnoToStatus(errno, absl::StrCat(path_, ": write failed at file offset ", offset_));
        return status_;
      }
      p += n;
      left -= static_cast<size_t>(n);
      offset_ += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  std::string path_;
  int fd_;
  io::TFRecordBufferWriter writer_;
  size_t buffer_bytes_;
  uint64_t offset_ = 0;
  absl::Status status_;
};

absl::StatusOr<TFRecordWriter> TFRecordWriter::Open(std::string path, TFRecordWriterOptions options) {
  absl::StatusOr<io::TFRecordBufferWriter> writer =
      io::TFRecordBufferWriter::Create(options.compression, options.compression_level);
  if (!writer.ok()) {
    return absl::Status(writer.status().code(), absl::StrCat(path, ": ", writer.status().message()));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open for writing"));
  return TFRecordWriter(
      std::make_unique<Impl>(std::move(path), fd, *std::move(writer), std::max<size_t>(options.buffer_bytes, 1)));
}

TFRecordWriter::TFRecordWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TFRecordWriter::TFRecordWriter(TFRecordWriter&&) noexcept = default;
TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&&) noexcept = default;
TFRecordWriter::~TFRecordWriter() = default;

absl::Status TFRecordWriter::Write(absl::string_view record) { return Write(io::AsBytes(record)); }
absl::Status TFRecordWriter::Write(std::span<const std::byte> record) {
  if (!impl_) return absl::FailedPreconditionError("TFRecordWriter: used after move");
  return impl_->Write(record);
}
absl::Status TFRecordWriter::Flush() {
  if (!impl_) return absl::FailedPreconditionError("TFRecordWriter: used after move");
  return impl_->Flush();
}
absl::Status TFRecordWriter::Close() {
  if (!impl_) return absl::FailedPreconditionError("TFRecordWriter: used after move");
  return impl_->Close();
}
const std::string& TFRecordWriter::path() const {
  static const std::string kEmpty;
  return impl_ ? impl_->path() : kEmpty;
}
uint64_t TFRecordWriter::records_written() const { return impl_ ? impl_->records_written() : 0; }

}  // namespace sluice
