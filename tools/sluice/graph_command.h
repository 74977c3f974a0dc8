// `sluice graph FILE|-`: a serialized pipeline (sluice/ops/graph.h) as readable text, with its fingerprint.
//
//   fingerprint 5f0c2a...e1
//   /           Batch -> vector<int64>  batch_size=2, drop_remainder=false, num_parallel_calls=0
//   /0            Range -> int64  start=0, stop=10, step=1
//
// Exit status 0, or 1 when the file cannot be read or is not a valid graph (the message names the file and
// the cause: DataLoss with the byte offset for malformed bytes). Nothing is built or run, so a graph whose
// functions or types are not registered in this binary still prints.
#ifndef SLUICE_TOOLS_SLUICE_GRAPH_COMMAND_H_
#define SLUICE_TOOLS_SLUICE_GRAPH_COMMAND_H_

#include <ostream>
#include <string>

namespace sluice::tools {

// Larger files are refused: a pipeline definition is kilobytes.
inline constexpr size_t kMaxGraphFileBytes = size_t{64} << 20;

int RunGraph(const std::string& file, std::ostream& out, std::ostream& err, int stdin_fd);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_GRAPH_COMMAND_H_
