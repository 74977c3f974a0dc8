// Forwarding header: the template now lives in include/sluice/detail/rebatch.h, so public headers (and
// examples, which only see include/) can use it.
#ifndef SLUICE_DISTRIBUTE_REBATCH_H_
#define SLUICE_DISTRIBUTE_REBATCH_H_

#include "sluice/detail/rebatch.h"

#endif  // SLUICE_DISTRIBUTE_REBATCH_H_
