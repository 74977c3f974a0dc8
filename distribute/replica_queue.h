// Forwarding header: the template now lives in include/sluice/detail/replica_queue.h, so public headers (and
// examples, which only see include/) can use it.
#ifndef SLUICE_DISTRIBUTE_REPLICA_QUEUE_H_
#define SLUICE_DISTRIBUTE_REPLICA_QUEUE_H_

#include "sluice/detail/replica_queue.h"

#endif  // SLUICE_DISTRIBUTE_REPLICA_QUEUE_H_
