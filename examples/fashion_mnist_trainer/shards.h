// The shards of a data folder written by `sluice convert fashion-mnist`, taken from its manifest.txt, so
// that the trainer reads exactly one conversion's files.
//
// Contract:
// - FindShards(dir) reads DIR/manifest.txt ("format 1", then one "file SPLIT NAME RECORDS BYTES" line per
//   shard, as tools/sluice/convert.cc writes it) and returns the train and test files it lists as
//   "DIR/NAME", each split in name order, with the record counts the manifest gives.
// - It refuses a folder whose files disagree with the manifest, with FailedPrecondition naming the folder,
//   the file at fault and what to do:
//     shard files (train-* or test-*, ".tfrecord" in the name) but no manifest: an interrupted conversion
//       or files from elsewhere;
//     a manifest that is not format 1, or a line it cannot read;
//     a listed file missing, or of another size than the manifest records;
//     a shard file the manifest does not list: a mixed set, such as two conversions with different shard
//       counts into one folder, which would train on every image twice.
//   NotFound: no folder, or a folder with neither a manifest nor shard files.
// - Files ending in ".tmp" are what an interrupted conversion leaves; they are never shards, and are
//   returned in `ignored` (not deleted: the trainer only reads the folder).
#ifndef SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_SHARDS_H_
#define SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_SHARDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fashion_mnist {

struct ShardSet {
  std::vector<std::string> train;  // "DIR/NAME", name order
  std::vector<std::string> test;
  int64_t train_records = 0;
  int64_t test_records = 0;
  std::vector<std::string> ignored;  // leftover ".tmp" files
};

absl::StatusOr<ShardSet> FindShards(const std::string& dir);

}  // namespace fashion_mnist

#endif  // SLUICE_EXAMPLES_FASHION_MNIST_TRAINER_SHARDS_H_
