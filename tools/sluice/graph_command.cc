#include "tools/sluice/graph_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/graph.h"

namespace sluice::tools {
namespace {

absl::StatusOr<std::string> ReadAll(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return bytes;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, "read failed");
    }
    if (bytes.size() + static_cast<size_t>(n) > kMaxGraphFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat("larger than ", kMaxGraphFileBytes >> 20,
                                                     " MiB: not a pipeline definition"));
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

int RunGraph(const std::string& file, std::ostream& out, std::ostream& err, int stdin_fd) {
  const bool from_stdin = file == "-";
  // O_NONBLOCK: a FIFO with no writer must not hang the open; regular files ignore it.
  const int fd = from_stdin ? stdin_fd : ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    err << "sluice graph: " << file << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  if (!from_stdin) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  absl::StatusOr<std::string> bytes = ReadAll(fd);
  if (!from_stdin) ::close(fd);
  if (!bytes.ok()) {
    err << "sluice graph: " << file << ": " << bytes.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<GraphNode> graph = ParseGraph(*bytes);
  if (!graph.ok()) {
    err << "sluice graph: " << file << ": " << graph.status().ToString() << "\n";
    return 1;
  }
  out << "fingerprint " << FingerprintHex(Fingerprint(*graph)) << "\n" << GraphText(*graph);
  return 0;
}

}  // namespace sluice::tools
