// `sluice inspect`: describes TFRecord files.
//
// For each file: the compression (detected from the bytes unless given), the record count, the file and
// payload bytes, the CRC status, and the first record decoded as a tf.train.Example (or SequenceExample):
// feature names, kinds and value counts. `--all` decodes every record and counts those that are not
// Examples. Exit status 0 when every file read cleanly, 1 when any was corrupt or unreadable (the
// message names the file and byte offset), 2 for bad usage.
#ifndef SLUICE_TOOLS_SLUICE_INSPECT_H_
#define SLUICE_TOOLS_SLUICE_INSPECT_H_

#include <string>
#include <vector>

namespace sluice::tools {

inline constexpr const char* kInspectUsage =
    "usage: sluice inspect [--all] [--compression=auto|none|gzip|zlib] FILE...\n"
    "\n"
    "Describes each TFRecord FILE: compression, record count, bytes, CRC status and the first\n"
    "record decoded as a tf.train.Example (feature names, types, lengths).\n"
    "\n"
    "options:\n"
    "  --all               decode every record, not just the first\n"
    "  --compression=C     auto (default: detected from the file's first bytes), none, gzip or zlib\n"
    "  --help              show this message\n"
    "\n"
    "exit status: 0 all files clean, 1 a file is corrupt or unreadable (file and offset printed),\n"
    "2 bad usage\n";

int RunInspect(const std::vector<std::string>& args);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_INSPECT_H_
