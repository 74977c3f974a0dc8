// The `sluice` command line: subcommands, flags, help and exit codes, parsed with CLI11. It lives outside
// main.cc so that tests run the same code the binary does.
//
//   sluice inspect [--json | --dump [--records A:B]] [--all] [--compression C] FILE...
//   sluice convert fashion-mnist --out DIR [--shards N] [--test-shards N] [--compression C | --gzip]
//                                [--limit N] [--source DIR] [--force]
//   sluice graph FILE|-
//   sluice help [COMMAND]
//   sluice --version | --help
//
// Contract:
// - Flags are --kebab-case and take their value as `--flag value` or `--flag=value`. Compression names
//   ignore case (ParseCompression); inspect also takes "auto". FILE "-" reads `stdin_fd`.
// - Output: results, help and the version on `out`; usage errors on `err` (each with a pointer to help).
// - Exit status: the command's own (inspect and convert: 0 success, 1 a file or conversion error); 0 for
//   --help (on any command), `help` and --version; 2 for every usage error: no command, an unknown command
//   or flag, a missing or bad value, `help` of an unknown command.
//
//   int main(int argc, char** argv) {
//     return RunSluice(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
//   }
#ifndef SLUICE_TOOLS_SLUICE_CLI_H_
#define SLUICE_TOOLS_SLUICE_CLI_H_

#include <unistd.h>

#include <ostream>
#include <string>
#include <vector>

namespace sluice::tools {

inline constexpr int kUsageError = 2;

// `args` excludes the program name.
int RunSluice(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
              int stdin_fd = STDIN_FILENO);

// "sluice 0.1.0", plus the linked library's version when it differs from the headers'.
std::string VersionLine();

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_CLI_H_
