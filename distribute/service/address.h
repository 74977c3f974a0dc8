// Internal: "host:port" addresses of the data service's processes.
#ifndef SLUICE_DISTRIBUTE_SERVICE_ADDRESS_H_
#define SLUICE_DISTRIBUTE_SERVICE_ADDRESS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sluice::service {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// "127.0.0.1:5050", "localhost:5050", "[::1]:5050". InvalidArgument naming the
// address otherwise.
absl::StatusOr<HostPort> ParseHostPort(const std::string& address);

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_ADDRESS_H_
