// sluice's distributed input, in one include: MirroredStrategy (single- and multi-worker), PerReplica,
// DistributedDataset / DistributedIterator / ReplicaIterator, AutoShardPolicy and WorkerAgreement,
// InputContext / ValueContext. See each header's contract and docs/distribute.md.
//
//   #include "sluice/distribute.h"
//   MirroredStrategy strategy(4);
//   auto it = strategy.DistributeDataset(Range(64).Batch(16, /*drop_remainder=*/true)).MakeIterator();
//   while (auto step = it.GetNextAsOptional()) { strategy.Run(TrainStep, *step); }
#ifndef SLUICE_DISTRIBUTE_H_
#define SLUICE_DISTRIBUTE_H_

#include "sluice/distribute/auto_shard.h"
#include "sluice/distribute/distributed_iterator.h"
#include "sluice/distribute/input_context.h"
#include "sluice/distribute/mirrored_strategy.h"
#include "sluice/distribute/per_replica.h"

#endif  // SLUICE_DISTRIBUTE_H_
