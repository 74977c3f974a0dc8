// A user's program: reads a TFRecord file of tf.train.Example (x_int: 10 int64 per record), sums x_int
// over every record through a pipeline, and splits the batches across two Mirrored replicas.
//
//   consumer FILE      prints "version=V records=N x_int_sum=S replica_rows=A+B"
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "sluice/sluice.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer FILE\n");
    return 2;
  }
  if (std::string_view(sluice::SluiceVersion()) != SLUICE_VERSION_STRING) {
    std::fprintf(stderr, "headers %s but library %s\n", SLUICE_VERSION_STRING, sluice::SluiceVersion());
    return 1;
  }
  sluice::ParseSpec spec;
  spec.fixed.push_back(sluice::FixedLenFeature{"x_int", sluice::DType::kInt64, sluice::Shape({10}), {}});
  sluice::Dataset<sluice::ParsedExample> parsed =
      sluice::TFRecord({std::string(argv[1])}).Batch(2).ParseExample(spec).Prefetch(2);

  int64_t records = 0;
  int64_t sum = 0;
  for (absl::StatusOr<sluice::ParsedExample> batch : parsed.MakeIterator()) {
    if (!batch.ok()) {
      std::fprintf(stderr, "error: %s\n", batch.status().ToString().c_str());
      return 1;
    }
    records += batch->fixed[0].shape().dim(0);
    for (int64_t v : batch->fixed[0].span<int64_t>()) sum += v;
  }

  sluice::MirroredStrategy strategy(2);
  auto batches = parsed.Map([](sluice::ParsedExample e) { return std::move(e.fixed[0]); });
  sluice::DistributedIterator<sluice::Tensor> it = strategy.DistributeDataset(batches).MakeIterator();
  int64_t rows[2] = {0, 0};
  while (auto step = it.GetNextAsOptional()) {
    for (int r = 0; r < 2; ++r) rows[r] += step->LocalResults()[r].shape().dim(0);
  }
  if (!it.status().ok()) {
    std::fprintf(stderr, "error: %s\n", it.status().ToString().c_str());
    return 1;
  }
  std::printf("version=%s records=%lld x_int_sum=%lld replica_rows=%lld+%lld\n", sluice::SluiceVersion(),
              static_cast<long long>(records), static_cast<long long>(sum), static_cast<long long>(rows[0]),
              static_cast<long long>(rows[1]));
  return 0;
}
