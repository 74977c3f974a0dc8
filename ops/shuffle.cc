#include "sluice/ops/shuffle.h"

#include <random>

namespace sluice::ops {

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace sluice::ops
