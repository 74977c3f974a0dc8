#include "tools/sluice/record_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"
#include "io/file_errors.h"
#include "io/tfrecord_format.h"
#include "sluice/engine/async_generator.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/record_readers.h"

namespace sluice::tools {
namespace {

// One read(2) of a stream; the decoder's buffers are reused, so this and the largest record bound memory.
constexpr size_t kStreamChunkBytes = size_t{1} << 20;

// Reads until `want` bytes or end of input; retries EINTR and short reads (pipes return what is there).
absl::StatusOr<size_t> ReadFull(int fd, char* buf, size_t want, const std::string& name) {
  size_t have = 0;
  while (have < want) {
    const ssize_t n = ::read(fd, buf + have, want - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat(name, ": read at offset ", have));
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  return have;
}

// `visitor` is a pointer into the caller's frame: the task is awaited by SyncWait in the same full
// expression.
Task<void> VisitFileRecords(Reactor* reactor, std::string path, Compression compression,
                            RecordVisitor* visitor) {
  TFRecordReaderOptions options;
  options.compression = compression;
  AsyncGenerator<absl::StatusOr<Record>> records = ReadTFRecords(*reactor, std::move(path), options);
  while (std::optional<absl::StatusOr<Record>> record = co_await records.Next()) {
    bool more = false;
    if (record->ok()) {
      more =
          visitor->OnRecord(std::string_view((*record)->str().data(), (*record)->size()), (*record)->offset);
    } else {
      more = visitor->OnError(record->status());
    }
    if (!more) break;
  }
}

const char* FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Compression DetectCompression(std::span<const unsigned char> head) {
  if (head.empty()) return Compression::kNone;
  if (head.size() >= io::kTFRecordHeaderBytes) {
    uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(head[8 + i]) << (8 * i);
    if (io::MaskCrc(io::Crc32c(head.data(), 8)) == stored) return Compression::kNone;
  }
  if (head.size() >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  if (head.size() >= 2 && (head[0] & 0x0f) == 8 && ((head[0] << 8) | head[1]) % 31 == 0) {
    return Compression::kZlib;
  }
  // Nothing matched: read it as uncompressed so the reader reports where the framing breaks.
  return Compression::kNone;
}

absl::StatusOr<TFRecordSource> TFRecordSource::Open(const std::string& path,
                                                    std::optional<Compression> compression, int stdin_fd) {
  TFRecordSource source;
  source.path_ = path;
  source.name_ = path == "-" ? "<stdin>" : path;
  if (compression) source.compression_ = *compression;
  source.detected_ = !compression;
  if (path == "-") {
    source.fd_ = stdin_fd;
  } else {
    // Non-blocking, and the type taken from the open fd: a FIFO without a writer would block open(2), and
    // nothing is read before the type is known (a writer's data stays in the FIFO).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return io::ErrnoStatus(errno, path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int stat_errno = errno;
      ::close(fd);
      return io::ErrnoStatus(stat_errno, path);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a TFRecord file"));
    }
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": not a regular file (", FileKind(st.st_mode),
          "); files are read by path, streams from stdin: sluice inspect - < ", path));
    }
    source.file_bytes_ = static_cast<uint64_t>(st.st_size);
    std::array<unsigned char, io::kTFRecordHeaderBytes> head{};
    ssize_t n = 0;
    if (!compression) n = ::pread(fd, head.data(), head.size(), 0);
    const int read_errno = errno;
    ::close(fd);
    if (n < 0) return io::ErrnoStatus(read_errno, absl::StrCat(path, ": read"));
    if (!compression) source.compression_ = DetectCompression(std::span(head.data(), static_cast<size_t>(n)));
    return source;
  }
  if (!compression) {
    source.head_.resize(io::kTFRecordHeaderBytes);
    absl::StatusOr<size_t> n = ReadFull(source.fd_, source.head_.data(), source.head_.size(), source.name_);
    if (!n.ok()) return n.status();
    source.head_.resize(*n);
    source.compression_ = DetectCompression(
        std::span(reinterpret_cast<const unsigned char*>(source.head_.data()), source.head_.size()));
  }
  return source;
}

TFRecordSource::TFRecordSource(TFRecordSource&& other) noexcept
    : path_(std::move(other.path_)),
      name_(std::move(other.name_)),
      compression_(other.compression_),
      detected_(other.detected_),
      file_bytes_(other.file_bytes_),
      fd_(std::exchange(other.fd_, -1)),
      head_(std::move(other.head_)) {}

TFRecordSource::~TFRecordSource() = default;

uint64_t TFRecordSource::Scan(RecordVisitor& visitor) {
  if (is_stream()) return ScanStream(visitor);
  SyncWait(VisitFileRecords(&DefaultReactor(), path_, compression_, &visitor));
  return file_bytes_;
}

uint64_t TFRecordSource::ScanStream(RecordVisitor& visitor) {
  TFRecordReaderOptions options;
  options.compression = compression_;
  io::TFRecordDecoder decoder(compression_, io::ParserOptionsFor(options, name_));
  // As ReadTFRecords: the decoder repeats an unrecoverable error on every call, so seeing the same error
  // twice ends the stream, unless the framing broke inside a compressed stream: then the rest is inflated
  // (skipping) to name the compressed damage, if any.
  absl::Status last_error;
  bool skipping = false;
  // Hands out what the decoder has; false when reading should stop.
  auto drain = [&]() {
    if (skipping) {
      absl::Status damage = decoder.SkipCompressed();
      if (!damage.ok()) visitor.OnError(damage);
      return damage.ok() && !decoder.skip_gave_up();
    }
    for (;;) {
      absl::StatusOr<std::optional<io::TFRecordView>> next = decoder.Next();
      if (!next.ok()) {
        if (next.status() == last_error) {
          if (!decoder.framing_lost_in_compressed()) return false;
          skipping = true;
          absl::Status damage = decoder.SkipCompressed();
          if (!damage.ok()) visitor.OnError(damage);
          return damage.ok() && !decoder.skip_gave_up();
        }
        last_error = next.status();
        if (!visitor.OnError(last_error)) return false;
        continue;
      }
      if (!next->has_value()) return true;
      last_error = absl::OkStatus();
      const absl::string_view data = (*next)->str();
      if (!visitor.OnRecord(std::string_view(data.data(), data.size()), (*next)->offset)) return false;
    }
  };
  uint64_t bytes = head_.size();
  decoder.Feed(io::AsBytes(head_));
  if (!drain()) return bytes;
  std::unique_ptr<char[]> chunk(new char[kStreamChunkBytes]);
  for (;;) {
    const ssize_t n = ::read(fd_, chunk.get(), kStreamChunkBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      visitor.OnError(absl::ErrnoToStatus(errno, absl::StrCat(name_, ": read at offset ", bytes)));
      return bytes;
    }
    if (n == 0) break;
    bytes += static_cast<uint64_t>(n);
    decoder.Feed(io::AsBytes(absl::string_view(chunk.get(), static_cast<size_t>(n))));
    if (!drain()) return bytes;
  }
  absl::Status finished = skipping ? decoder.FinishCompressed() : decoder.Finish();
  if (!finished.ok() && finished != last_error) visitor.OnError(finished);
  return bytes;
}

}  // namespace sluice::tools
