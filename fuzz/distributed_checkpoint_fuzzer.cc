// libFuzzer target for the DistributedIterator checkpoint body
// (sluice/distribute/detail/distributed_checkpoint.h).
//
// The input is a state body, behind the frame's checksum (which would stop almost every mutation). Decoding
// must return (never crash, hang or allocate beyond the input's size); on failure the code is DataLoss or
// FailedPrecondition (another batch type). On success the decoded state is the oracle: its encoding decodes
// again and encodes to as many bytes.
// A violated invariant is __builtin_trap(), which libFuzzer reports as a crash.
//
// Build: see fuzz/README.md (scripts/fuzz builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/distribute/detail/distributed_checkpoint.h"

namespace {

template <class B>
void Check(std::string_view body) {
  absl::StatusOr<sluice::distribute::DistributedCheckpoint<B>> state =
      sluice::distribute::DecodeDistributedCheckpointBody<B>(body);
  if (!state.ok()) {
    const absl::StatusCode code = state.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition)
      __builtin_trap();
    return;
  }
  const std::string encoded = sluice::distribute::EncodeDistributedCheckpointBody(*state);
  absl::StatusOr<sluice::distribute::DistributedCheckpoint<B>> again =
      sluice::distribute::DecodeDistributedCheckpointBody<B>(encoded);
  if (!again.ok()) __builtin_trap();
  // The same size, not the same bytes: absl::Status visits its payloads in an unspecified order.
  if (sluice::distribute::EncodeDistributedCheckpointBody(*again).size() != encoded.size()) __builtin_trap();
  // The framed form goes through the checksum and back.
  const std::string framed = sluice::distribute::EncodeDistributedCheckpoint(*state);
  if (!sluice::distribute::DecodeDistributedCheckpoint<B>(framed).ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check<std::vector<int64_t>>(bytes);
  Check<std::vector<std::string>>(bytes);
  return 0;
}
