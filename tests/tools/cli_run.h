// The `sluice` command line run in-process, as the binary runs it, with its streams captured.
#ifndef SLUICE_TESTS_TOOLS_CLI_RUN_H_
#define SLUICE_TESTS_TOOLS_CLI_RUN_H_

#include <sstream>
#include <string>
#include <vector>

#include "tools/sluice/cli.h"

namespace sluice::tools {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// stdin is closed (-1): a command that needs input must say so, not wait on the test's terminal.
inline CliRun RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunSluice(args, out, err, /*stdin_fd=*/-1);
  return {code, out.str(), err.str()};
}

}  // namespace sluice::tools

#endif  // SLUICE_TESTS_TOOLS_CLI_RUN_H_
