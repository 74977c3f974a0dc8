// Everything public in sluice, in one include: the dataset API (sluice/dataset.h), distributed input
// (sluice/distribute.h), the coroutine runtime (sluice/engine/), files and record formats (sluice/io/),
// logging and the version. Including the narrower entry headers builds faster.
//
//   #include "sluice/sluice.h"
#ifndef SLUICE_SLUICE_H_
#define SLUICE_SLUICE_H_

#include "sluice/dataset.h"
#include "sluice/distribute.h"
#include "sluice/engine/async_event.h"
#include "sluice/engine/async_generator.h"
#include "sluice/engine/async_mutex.h"
#include "sluice/engine/async_scope.h"
#include "sluice/engine/async_semaphore.h"
#include "sluice/engine/channel.h"
#include "sluice/engine/executor.h"
#include "sluice/engine/log.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/run_loop.h"
#include "sluice/engine/status_macros.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/engine/when_all.h"
#include "sluice/io/example.h"
#include "sluice/io/file.h"
#include "sluice/io/record_readers.h"
#include "sluice/io/sequential_reader.h"
#include "sluice/io/tensor.h"
#include "sluice/io/tfrecord.h"
#include "sluice/version.h"

#endif  // SLUICE_SLUICE_H_
