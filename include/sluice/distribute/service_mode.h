// The data service's processing modes (docs/service.md), shared by the public API and the wire messages.
#ifndef SLUICE_DISTRIBUTE_SERVICE_MODE_H_
#define SLUICE_DISTRIBUTE_SERVICE_MODE_H_

#include <cstdint>

#include "sluice/export.h"

namespace sluice::service {

// How workers divide a job's input (tf.data service's processing modes).
enum class ProcessingMode : uint32_t {
  kUnspecified = 0,       // refused by the dispatcher: a request must say which it means
  kParallelEpochs = 1,    // every worker runs the whole pipeline
  kDistributedEpoch = 2,  // the dispatcher hands out splits of the one splittable source
};

// "parallel_epochs", "distributed_epoch", "unspecified".
SLUICE_EXPORT const char* ProcessingModeName(ProcessingMode mode);

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_MODE_H_
