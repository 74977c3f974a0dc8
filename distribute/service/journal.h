// Internal: the dispatcher's write-ahead journal, one file (`journal`) of TFRecord-framed events in the
// dispatcher's work folder.
//
// Contract:
// - Open(dir) creates the folder and the file when missing, locks the file (flock) so that a second
//   dispatcher on the same folder fails with FailedPrecondition, and reads back every record written
//   before (`replay`). A record cut off at the end (a crash in the middle of an append) is dropped and the
//   file truncated to the last whole record, which `note` says; a record that fails its CRC anywhere
//   else is DataLoss naming the file and the offset, and nothing is opened.
// - Append(record) writes one framed record and returns once it is on disk (fdatasync), so an answer sent
//   after it survives a crash of the process or of the machine. A failed write is Internal naming the
//   file and the cause; the file is cut back to its previous end, so the journal stays whole.
// - Not thread-safe: the dispatcher appends under its own lock.
//
//   std::vector<std::string> replay;
//   std::string note;
//   absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open("/var/lib/sluice", &replay, &note);
//   absl::Status written = (*journal)->Append(EncodeJournalEvent(event));
#ifndef SLUICE_DISTRIBUTE_SERVICE_JOURNAL_H_
#define SLUICE_DISTRIBUTE_SERVICE_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::service {

class Journal {
 public:
  static absl::StatusOr<std::unique_ptr<Journal>> Open(const std::string& dir,
                                                       std::vector<std::string>* replay, std::string* note);
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  absl::Status Append(std::string_view record);
  const std::string& path() const { return path_; }

 private:
  Journal(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}

  int fd_;
  std::string path_;
  uint64_t size_;  // bytes of whole records in the file
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_JOURNAL_H_
