#include "distribute/service/address.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice::service {

absl::StatusOr<HostPort> ParseHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\" is not HOST:PORT"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  uint32_t port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\": bad port"));
  }
  return HostPort{std::move(host), static_cast<uint16_t>(port)};
}

}  // namespace sluice::service
