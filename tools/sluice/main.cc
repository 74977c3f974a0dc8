// The `sluice` command line: one binary, one subcommand per task.
//
//   sluice inspect [--all] [--compression=auto|none|gzip|zlib] FILE...
//   sluice convert fashion-mnist --out DIR [--shards N] [--compression=none|gzip|zlib] ...
//   sluice help | --help
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "tools/sluice/convert.h"
#include "tools/sluice/inspect.h"

namespace {

constexpr const char* kUsage =
    "usage: sluice <command> [options] [args]\n"
    "\n"
    "commands:\n"
    "  inspect   describe TFRecord files: compression, records, bytes, CRC status, first Example\n"
    "  convert   write a dataset (fashion-mnist) as sharded TFRecord files of tf.train.Example\n"
    "  help      show this message, or `sluice help <command>` for one command\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "help" || command == "--help" || command == "-h") {
    if (!args.empty() && args.front() == "inspect") {
      std::fputs(sluice::tools::kInspectUsage, stdout);
    } else if (!args.empty() && args.front() == "convert") {
      std::fputs(sluice::tools::kConvertUsage, stdout);
    } else {
      std::fputs(kUsage, stdout);
    }
    return 0;
  }
  if (command == "inspect") return sluice::tools::RunInspect(args);
  if (command == "convert") return sluice::tools::RunConvert(args);
  std::fprintf(stderr, "sluice: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
