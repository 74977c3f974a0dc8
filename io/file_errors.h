// ErrnoStatus: absl::ErrnoToStatus with the file errors it leaves UNKNOWN given a code a caller can act
// on. ELOOP (a symbolic link loop, or O_NOFOLLOW on a link) becomes FailedPrecondition, as a directory or
// another file that is not a regular one does in File::Open. The message is absl's: "MESSAGE: <errno
// text>", so it names whatever `message` names (the path).
//
// RemapUnknownFileError: the same for a Status already made by absl::ErrnoToStatus elsewhere (the
// reactor's open): an UNKNOWN whose message ends in ELOOP's errno text becomes FailedPrecondition with
// the same message. Anything else is returned unchanged.
#ifndef SLUICE_IO_FILE_ERRORS_H_
#define SLUICE_IO_FILE_ERRORS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice::io {

absl::Status ErrnoStatus(int error_number, absl::string_view message);

absl::Status RemapUnknownFileError(absl::Status status);

}  // namespace sluice::io

#endif  // SLUICE_IO_FILE_ERRORS_H_
