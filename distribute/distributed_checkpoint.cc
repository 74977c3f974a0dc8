#include "sluice/distribute/detail/distributed_checkpoint.h"

#include <cstring>

#include "engine/xxhash64.h"

namespace sluice::distribute {
namespace {

constexpr std::string_view kMagic = "SLDI";
constexpr size_t kHeaderBytes = 4 + 8 + 8;  // magic, version, checksum of the body

}  // namespace

std::string FrameDistributedCheckpoint(std::string_view body) {
  std::string out(kMagic);
  ElementCodec<uint64_t>::Encode(kDistributedCheckpointVersion, &out);
  ElementCodec<uint64_t>::Encode(XxHash64(body), &out);
  out += body;
  return out;
}

absl::StatusOr<std::string_view> UnframeDistributedCheckpoint(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("not a sluice distributed iterator state (no \"SLDI\" header)");
  }
  if (bytes.size() < kHeaderBytes)
    return absl::DataLossError("distributed iterator state is truncated in its header");
  std::string_view header = bytes.substr(kMagic.size(), kHeaderBytes - kMagic.size());
  uint64_t version = 0;
  uint64_t checksum = 0;
  if (!ElementCodec<uint64_t>::Decode(&header, &version).ok() ||
      !ElementCodec<uint64_t>::Decode(&header, &checksum).ok()) {
    return absl::DataLossError("distributed iterator state is truncated in its header");
  }
  const std::string_view body = bytes.substr(kHeaderBytes);
  if (XxHash64(body) != checksum) {
    return absl::DataLossError(
        absl::StrCat("distributed iterator state is corrupt: its checksum does not match its ", body.size(),
                     " bytes (truncated or altered)"));
  }
  if (version != kDistributedCheckpointVersion) {
    return absl::FailedPreconditionError(absl::StrCat("distributed iterator state has format version ",
                                                      version, ", this build reads only version ",
                                                      kDistributedCheckpointVersion));
  }
  return body;
}

}  // namespace sluice::distribute
