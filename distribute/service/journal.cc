#include "distribute/service/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/file_errors.h"
#include "io/tfrecord_format.h"

namespace sluice::service {
namespace {

absl::StatusOr<std::string> ReadWhole(int fd, const std::string& path) {
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io::ErrnoStatus(errno, absl::StrCat("reading the journal ", path));
    if (n == 0) return bytes;
    bytes.append(chunk, static_cast<size_t>(n));
  }
}

absl::Status WriteFully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Makes the new file's directory entry durable too.
void SyncFolder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// The records of `bytes`, and where the whole ones end. A cut-off last record, or zeros at the end (a
// file extended before its data reached the disk), end the records; anything else that fails is DataLoss.
absl::Status ParseRecords(std::string_view bytes, const std::string& path, std::vector<std::string>* records,
                          uint64_t* whole_end) {
  io::TFRecordParserOptions options;
  options.file_name = path;
  io::TFRecordParser parser(options);
  parser.Feed(io::AsBytes(absl::string_view(bytes.data(), bytes.size())));
  *whole_end = 0;
  for (;;) {
    absl::StatusOr<std::optional<io::TFRecordView>> record = parser.Next();
    if (!record.ok()) {
      const std::string_view rest = bytes.substr(*whole_end);
      if (std::all_of(rest.begin(), rest.end(), [](char c) { return c == '\0'; })) return absl::OkStatus();
      return record.status();
    }
    if (!record->has_value()) break;
    records->emplace_back(io::AsStringView((*record)->data));
    *whole_end =
        (*record)->offset + io::kTFRecordHeaderBytes + (*record)->data.size() + io::kTFRecordFooterBytes;
  }
  if (parser.Finish().ok()) *whole_end = bytes.size();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(const std::string& dir,
                                                       std::vector<std::string>* replay, std::string* note) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the work folder ", dir, ": ", error.message()));
  }
  std::string path = (std::filesystem::path(dir) / "journal").string();
  const bool existed = std::filesystem::exists(path, error);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io::ErrnoStatus(errno, absl::StrCat("opening the journal ", path));
  auto journal = std::unique_ptr<Journal>(new Journal(fd, path, 0));  // closes fd on every error below
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("another dispatcher uses the work folder ", dir, " (", path, " is locked)"));
  }
  absl::StatusOr<std::string> bytes = ReadWhole(fd, path);
  if (!bytes.ok()) return bytes.status();
  uint64_t whole_end = 0;
  if (absl::Status parsed = ParseRecords(*bytes, path, replay, &whole_end); !parsed.ok()) {
    return absl::DataLossError(absl::StrCat("the dispatcher's journal is damaged: ", parsed.message()));
  }
  if (whole_end < bytes->size()) {
    *note = absl::StrCat("dropped an incomplete last record of ", path, " (bytes ", whole_end, " to ",
                         bytes->size(), ", written when the dispatcher stopped mid-append)");
    if (::ftruncate(fd, static_cast<off_t>(whole_end)) != 0 || ::fdatasync(fd) != 0) {
      return io::ErrnoStatus(errno, absl::StrCat("truncating the journal ", path));
    }
  }
  if (::lseek(fd, static_cast<off_t>(whole_end), SEEK_SET) < 0) {
    return io::ErrnoStatus(errno, absl::StrCat("seeking in the journal ", path));
  }
  journal->size_ = whole_end;
  if (!existed) SyncFolder(dir);
  return journal;
}

Journal::~Journal() { ::close(fd_); }

absl::Status Journal::Append(std::string_view record) {
  std::string framed;
  io::AppendTFRecord(absl::string_view(record.data(), record.size()), &framed);
  absl::Status written = WriteFully(fd_, framed);
  if (written.ok() && ::fdatasync(fd_) != 0) written = absl::ErrnoToStatus(errno, "fdatasync");
  if (!written.ok()) {
    // Cut back to the last whole record so that later appends still follow one.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) == 0)
      (void)::lseek(fd_, static_cast<off_t>(size_), SEEK_SET);
    return absl::InternalError(absl::StrCat("appending to the journal ", path_, ": ", written.message()));
  }
  size_ += framed.size();
  return absl::OkStatus();
}

}  // namespace sluice::service
