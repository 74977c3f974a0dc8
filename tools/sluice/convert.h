// `sluice convert fashion-mnist`: Fashion-MNIST IDX files -> sharded TFRecord files of tf.train.Example.
//
// Contract:
//   - Input: SOURCE/{train,t10k}-{images-idx3,labels-idx1}-ubyte, each either plain or with a ".gz"
//     suffix (the Debian package dataset-fashion-mnist ships the .gz files in /usr/share/datasets/
//     fashion-mnist). Images must be uint8 with 3 dims N x 28 x 28 (magic 2051), labels uint8 with 1 dim
//     N (magic 2049), the same N for images and labels of a split (60,000 / 10,000 in the package; any
//     equal N is accepted), every label in 0..9.
//   - Output, per split S in {train, test}: OUT/S-00000-of-0000K.tfrecord[.gz|.zlib], K = shards (train)
//     and test_shards (test; 0 means the same as shards). Records are in source order and split into
//     contiguous blocks (as TFDS does): shard i holds records [i*N/K, (i+1)*N/K), so reading the shards
//     in name order gives the source order. Each record is a tf.train.Example with features
//       image:  bytes_list, one value: 784 raw uint8 pixels, row-major (the IDX bytes unchanged);
//       label:  int64_list, one value in 0..9;
//       height, width: int64_list, one value each (28), so the records describe themselves.
//   - Crash safety: every file is written under a temporary name (NAME.tmp) and renamed when complete;
//     OUT/manifest.txt is removed first and written (also via rename) last, so it exists only when every
//     shard it lists is complete. A run whose manifest matches (same options, same source file sizes, every
//     listed shard present with the recorded size) does nothing and reports skipped = true, unless force.
//     Shards of an earlier run with other options are left in place (their names differ); nothing is fsynced.
//   - Errors (absl::Status; messages name the file, and the element index where one is at fault):
//       NotFound: the source directory, or one of its four files (both names tried are listed);
//       InvalidArgument: bad options; wrong IDX type/rank/size (ReadIdxFile's errors pass through: DataLoss
//         for truncated or trailing bytes); image/label counts that differ; a label outside 0..9;
//       errno mappings of mkdir/open/write/rename in OUT, naming the path.
//   - Threading: synchronous, single-threaded; one run per OUT at a time (concurrent runs on the same OUT
//     race on the temporary names).
//
//   ConvertOptions options;
//   options.out_dir = "/tmp/fmnist";
//   options.compression = Compression::kGzip;
//   SLUICE_ASSIGN_OR_RETURN(ConvertSummary summary, ConvertFashionMnist(options));
//   // summary.train_records == 60000, summary.files.size() == 16
//
// RunConvert is the command line's back end (tools/sluice/cli.cc parses the flags): it runs the conversion,
// prints the files written and a summary on `out` or the error on `err`, and returns 0 on success, 1 on a
// conversion error.
#ifndef SLUICE_TOOLS_SLUICE_CONVERT_H_
#define SLUICE_TOOLS_SLUICE_CONVERT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/io/tfrecord.h"

namespace sluice::tools {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct ConvertOptions {
  std::string source_dir = kDefaultFashionMnistDir;
  std::string out_dir;
  int shards = 8;       // train split; 1..100000
  int test_shards = 0;  // 0: same as shards
  Compression compression = Compression::kNone;
  int64_t limit = -1;  // -1: all examples; else the first `limit` of each split
  bool force = false;
};

struct ConvertedFile {
  std::string path;
  std::string split;  // "train" or "test"
  int64_t records = 0;
  uint64_t bytes = 0;  // file size on disk
};

struct ConvertSummary {
  std::vector<ConvertedFile> files;  // train shards in order, then test shards
  int64_t train_records = 0;
  int64_t test_records = 0;
  uint64_t total_bytes = 0;
  double seconds = 0;
  bool skipped = false;  // the manifest showed the output complete; nothing was written
  std::string manifest_path;
};

// Output file name of one shard, e.g. ShardFileName("train", 0, 8, kGzip) ==
// "train-00000-of-00008.tfrecord.gz".
std::string ShardFileName(const std::string& split, int index, int count, Compression compression);

absl::StatusOr<ConvertSummary> ConvertFashionMnist(const ConvertOptions& options);

int RunConvert(const ConvertOptions& options, std::ostream& out, std::ostream& err);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_CONVERT_H_
