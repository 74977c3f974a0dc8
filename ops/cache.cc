#include "sluice/ops/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"
#include "sluice/ops/element_codec.h"

namespace sluice::ops::cache_file {
namespace {

// Data file: kDataMagic | element stream header (sluice/ops/element_codec.h), then per record:
// uint64 LE length | payload | uint32 LE masked CRC32C(payload).
// Index file: kIndexMagic | uint64 records | uint64 data file size | uint32 masked CRC32C of the 24 bytes
// before it. All little-endian.
// File format 1 ("SLCACHE1") had no element stream header; its files are refused by name.
constexpr char kDataMagic[8] = {'S', 'L', 'C', 'A', 'C', 'H', 'E', '2'};
constexpr size_t kMagicPrefix = 7;  // "SLCACHE", then the format digit
constexpr char kFormatDigit = '2';
// Bounds the bytes read to find the header; a longer type name reads as a damaged header.
constexpr size_t kMaxStreamHeader = size_t{64} << 10;
constexpr char kIndexMagic[8] = {'S', 'L', 'C', 'I', 'D', 'X', '0', '1'};
constexpr size_t kIndexSize = 8 + 8 + 8 + 4;
constexpr size_t kRecordOverhead = 8 + 4;
constexpr size_t kIoChunk = size_t{1} << 20;

std::string IndexPath(const std::string& filename) { return filename + ".index"; }
std::string LockPath(const std::string& filename) { return filename + ".lockfile"; }

absl::Status ErrnoError(int err, absl::string_view what, const std::string& path) {
  std::string message = absl::StrCat("Cache: cannot ", what, " '", path, "': ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

void PutU64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
void PutU32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
uint64_t GetU64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}
uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

absl::Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write cache file", path);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status DataLoss(const std::string& path, uint64_t offset, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("Cache: cache file '", path, "' is damaged at offset ", offset, ": ", what));
}

}  // namespace

bool IsComplete(const std::string& filename) {
  struct stat st;
  return ::stat(IndexPath(filename).c_str(), &st) == 0;
}

absl::StatusOr<std::unique_ptr<Writer>> Writer::Open(const std::string& filename, std::string_view element_type) {
  const std::string lock = LockPath(filename);
  int lock_fd = ::open(lock.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(
          absl::StrCat("Cache: cache file '", filename, "' is already in use by another caching iterator (lockfile '",
                       lock, "' exists). If no other iterator is writing this cache, delete the lockfile."));
    }
    return ErrnoError(errno, "create lockfile", lock);
  }
  std::string pid = absl::StrCat(::getpid(), "\n");
  (void)WriteAll(lock_fd, pid.data(), pid.size(), lock);  // informative only
  ::close(lock_fd);
  // A writer that finished between the caller's check and our lock published a cache: truncating its
  // data file now would destroy it.
  if (IsComplete(filename)) {
    ::unlink(lock.c_str());
    return std::unique_ptr<Writer>();
  }
  // Read-write: a checkpoint reads the partial file back (Contents).
  int fd = ::open(filename.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    absl::Status status = ErrnoError(errno, "create cache file", filename);
    ::unlink(lock.c_str());
    return status;
  }
  std::unique_ptr<Writer> writer(new Writer(filename, fd));
  writer->buffer_.reserve(kIoChunk + kRecordOverhead);
  writer->buffer_.append(kDataMagic, sizeof(kDataMagic));
  EncodeElementStreamHeader(element_type, &writer->buffer_);
  return writer;
}

absl::StatusOr<std::unique_ptr<Writer>> Writer::Resume(const std::string& filename,
                                                       std::string_view element_type,
                                                       std::string_view contents, uint64_t records) {
  // The contents are checked before the lock is taken, so a bad state leaves the files alone.
  std::string header(kDataMagic, sizeof(kDataMagic));
  EncodeElementStreamHeader(element_type, &header);
  if (contents.substr(0, header.size()) != header) {
    return absl::DataLossError("the partial cache file does not start with this cache's header");
  }
  uint64_t offset = header.size();
  uint64_t count = 0;
  while (offset < contents.size()) {
    const uint64_t left = contents.size() - offset;
    if (left < kRecordOverhead) return absl::DataLossError(absl::StrCat("truncated record at ", offset));
    const uint64_t length = GetU64(contents.data() + offset);
    if (length > left - kRecordOverhead) return absl::DataLossError(absl::StrCat("bad length at ", offset));
    const char* payload = contents.data() + offset + 8;
    if (io::UnmaskCrc(GetU32(payload + length)) != io::Crc32c(payload, static_cast<size_t>(length))) {
      return absl::DataLossError(absl::StrCat("record checksum mismatch at ", offset));
    }
    offset += kRecordOverhead + length;
    ++count;
  }
  if (count != records) return absl::DataLossError(absl::StrCat(count, " records, ", records, " expected"));
  absl::StatusOr<std::unique_ptr<Writer>> writer = Open(filename, element_type);
  if (!writer.ok() || *writer == nullptr) return writer;
  (*writer)->buffer_.assign(contents.data(), contents.size());  // in place of the header Open put there
  (*writer)->records_ = records;
  return writer;
}

absl::StatusOr<std::string> Writer::Contents() const {
  if (!open_) {
    return absl::FailedPreconditionError(absl::StrCat("Cache: writer for '", filename_, "' is closed"));
  }
  std::string out(static_cast<size_t>(bytes_), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, "read back cache file", filename_);
    if (n == 0) return DataLoss(filename_, got, "shorter than what was written");
    got += static_cast<size_t>(n);
  }
  out += buffer_;
  return out;
}

Writer::~Writer() { Abandon(); }

absl::Status Writer::Append(std::string_view payload) {
  if (!open_) return absl::FailedPreconditionError(absl::StrCat("Cache: writer for '", filename_, "' is closed"));
  char header[8];
  PutU64(payload.size(), header);
  buffer_.append(header, sizeof(header));
  buffer_.append(payload.data(), payload.size());
  char crc[4];
  PutU32(io::MaskCrc(io::Crc32c(payload.data(), payload.size())), crc);
  buffer_.append(crc, sizeof(crc));
  ++records_;
  if (buffer_.size() >= kIoChunk) return Flush();
  return absl::OkStatus();
}

absl::Status Writer::Flush() {
  absl::Status status = WriteAll(fd_, buffer_.data(), buffer_.size(), filename_);
  bytes_ += buffer_.size();
  buffer_.clear();
  return status;
}

absl::Status Writer::Finish() {
  if (!open_) return absl::FailedPreconditionError(absl::StrCat("Cache: writer for '", filename_, "' is closed"));
  absl::Status status = Flush();
  if (status.ok() && ::close(fd_) != 0) status = ErrnoError(errno, "close cache file", filename_);
  fd_ = -1;
  if (!status.ok()) {
    Abandon();
    return status;
  }
  char index[kIndexSize];
  std::memcpy(index, kIndexMagic, 8);
  PutU64(records_, index + 8);
  PutU64(bytes_, index + 16);
  PutU32(io::MaskCrc(io::Crc32c(index, 24)), index + 24);
  const std::string final_index = IndexPath(filename_);
  const std::string temp_index = final_index + ".tmp";
  int fd = ::open(temp_index.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    status = ErrnoError(errno, "create cache index", temp_index);
  } else {
    status = WriteAll(fd, index, kIndexSize, temp_index);
    if (::close(fd) != 0 && status.ok()) status = ErrnoError(errno, "close cache index", temp_index);
    // rename() publishes the index atomically: a reader sees either no index or a whole one.
    if (status.ok() && ::rename(temp_index.c_str(), final_index.c_str()) != 0) {
      status = ErrnoError(errno, "publish cache index", final_index);
    }
    if (!status.ok()) ::unlink(temp_index.c_str());
  }
  if (!status.ok()) {
    Abandon();
    return status;
  }
  open_ = false;
  ::unlink(LockPath(filename_).c_str());
  return absl::OkStatus();
}

void Writer::Abandon() {
  if (!open_) return;
  open_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(filename_.c_str());
  ::unlink(LockPath(filename_).c_str());
}

absl::StatusOr<std::unique_ptr<Reader>> Reader::Open(const std::string& filename, std::string_view element_type) {
  const std::string index_path = IndexPath(filename);
  int index_fd = ::open(index_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (index_fd < 0) return ErrnoError(errno, "open cache index", index_path);
  char index[kIndexSize + 1];
  size_t got = 0;
  while (got < sizeof(index)) {
    ssize_t n = ::read(index_fd, index + got, sizeof(index) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(index_fd);
  if (got != kIndexSize || std::memcmp(index, kIndexMagic, 8) != 0 ||
      io::UnmaskCrc(GetU32(index + 24)) != io::Crc32c(index, 24)) {
    return absl::DataLossError(absl::StrCat("Cache: cache index '", index_path, "' is damaged (", got, " bytes)"));
  }
  uint64_t records = GetU64(index + 8);
  uint64_t size = GetU64(index + 16);
  int fd = ::open(filename.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open cache file", filename);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    absl::Status status = ErrnoError(errno, "stat cache file", filename);
    ::close(fd);
    return status;
  }
  if (static_cast<uint64_t>(st.st_size) != size) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat("Cache: cache file '", filename, "' is ", st.st_size,
                                            " bytes but its index says ", size));
  }
  std::unique_ptr<Reader> reader(new Reader(filename, fd, records, size));
  absl::StatusOr<bool> filled = reader->Fill(sizeof(kDataMagic));
  if (!filled.ok()) return filled.status();
  if (!*filled || std::memcmp(reader->buffer_.data(), kDataMagic, kMagicPrefix) != 0) {
    return DataLoss(filename, 0, "not a sluice cache file");
  }
  char digit = reader->buffer_[kMagicPrefix];
  if (digit != kFormatDigit) {
    if (digit < '1' || digit > '9') return DataLoss(filename, 0, "not a sluice cache file");
    return absl::FailedPreconditionError(
        absl::StrCat("Cache: cache file '", filename, "' has file format ", std::string(1, digit),
                     (digit < kFormatDigit ? " (written by an older sluice)" : " (written by a newer sluice)"),
                     "; this build reads format ", std::string(1, kFormatDigit),
                     ". Delete it and its .index to rebuild the cache"));
  }
  reader->pos_ += sizeof(kDataMagic);
  filled = reader->Fill(static_cast<size_t>(std::min<uint64_t>(size - sizeof(kDataMagic), kMaxStreamHeader)));
  if (!filled.ok()) return filled.status();
  std::string_view header(reader->buffer_.data() + reader->pos_, reader->end_ - reader->pos_);
  const size_t available = header.size();
  if (absl::Status s = CheckElementStreamHeader(&header, element_type); !s.ok()) {
    if (s.code() == absl::StatusCode::kDataLoss) return DataLoss(filename, sizeof(kDataMagic), s.message());
    return absl::Status(s.code(), absl::StrCat("Cache: cache file '", filename, "': ", s.message(),
                                               ". Delete it and its .index to rebuild the cache"));
  }
  reader->pos_ += available - header.size();
  return reader;
}

Reader::~Reader() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<bool> Reader::Fill(size_t n) {
  if (end_ - pos_ >= n) return true;
  // Move the unread tail to the front, then read until n bytes are there.
  std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
  file_offset_ += pos_;
  end_ -= pos_;
  pos_ = 0;
  if (buffer_.size() < std::max(n, kIoChunk)) buffer_.resize(std::max(n, kIoChunk));
  while (end_ < n && !eof_) {
    ssize_t got = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read cache file", filename_);
    }
    if (got == 0) eof_ = true;
    end_ += static_cast<size_t>(got);
  }
  return end_ >= n;
}

absl::StatusOr<std::optional<std::string_view>> Reader::Next() {
  uint64_t offset = file_offset_ + pos_;
  if (read_records_ == records_) {
    if (offset != size_) return DataLoss(filename_, offset, "bytes after the last record");
    return std::optional<std::string_view>();
  }
  if (size_ - offset < kRecordOverhead) return DataLoss(filename_, offset, "truncated record header");
  absl::StatusOr<bool> filled = Fill(8);
  if (!filled.ok()) return filled.status();
  if (!*filled) return DataLoss(filename_, offset, "truncated record header");
  uint64_t length = GetU64(buffer_.data() + pos_);
  if (length > size_ - offset - kRecordOverhead) {
    return DataLoss(filename_, offset, absl::StrCat("record length ", length, " runs past the end of the file"));
  }
  filled = Fill(kRecordOverhead + static_cast<size_t>(length));
  if (!filled.ok()) return filled.status();
  if (!*filled) return DataLoss(filename_, offset, "truncated record");
  const char* payload = buffer_.data() + pos_ + 8;
  uint32_t stored = GetU32(payload + length);
  if (io::UnmaskCrc(stored) != io::Crc32c(payload, static_cast<size_t>(length))) {
    return DataLoss(filename_, offset, "record checksum mismatch");
  }
  record_offset_ = offset;
  pos_ += kRecordOverhead + static_cast<size_t>(length);
  ++read_records_;
  return std::optional<std::string_view>(std::string_view(payload, static_cast<size_t>(length)));
}

}  // namespace sluice::ops::cache_file
