// The `sluice` command line: one binary, one subcommand per task (grammar, help and exit codes in cli.h).
//
//   sluice inspect [--json | --dump [--records A:B]] [--all] [--compression C] FILE...
//   sluice convert fashion-mnist --out DIR [--shards N] [--test-shards N] [--compression C] ...
//   sluice help [COMMAND] | --help | --version
#include <iostream>
#include <string>
#include <vector>

#include "benchmarks/allocation_counter.h"  // replaces operator new in this binary, for `sluice bench`
#include "tools/sluice/bench_process.h"
#include "tools/sluice/cli.h"

int main(int argc, char** argv) {
  if (sluice::bench::kCountsAllocations) sluice::tools::SetAllocationCounter(&sluice::bench::AllocationCount);
  return sluice::tools::RunSluice(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
