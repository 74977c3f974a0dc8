#include "io/file_errors.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"

namespace sluice::io {

absl::Status ErrnoStatus(int error_number, absl::string_view message) {
  absl::Status status = absl::ErrnoToStatus(error_number, message);
  if (error_number == ELOOP) return absl::FailedPreconditionError(status.message());
  return status;
}

absl::Status RemapUnknownFileError(absl::Status status) {
  // glibc's text for a known errno is a constant string, so comparing it is stable within the process.
  if (status.code() == absl::StatusCode::kUnknown && absl::EndsWith(status.message(), std::strerror(ELOOP))) {
    return absl::FailedPreconditionError(status.message());
  }
  return status;
}

}  // namespace sluice::io
