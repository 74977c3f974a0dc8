// tf.distribute's "Distributed input" guide, written with sluice: how global batches are split across
// replicas (static and dynamic batch sizes, partial batches), how multi-worker input is sharded, and how
// outputs are put back in input order with Enumerate + Run. Prints each result; runs in well under a second.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/dataset.h"
#include "sluice/distribute.h"
#include "sluice/io/tensor.h"

namespace {

using sluice::AutoShardPolicy;
using sluice::DistributeOptions;
using sluice::MirroredStrategy;
// Range(n).Batch(g) stacks the int64 elements into one int64[g] tensor per batch, as tf.data does.
using Batch = sluice::Tensor;

std::string Show(const Batch& b) { return absl::StrCat("[", absl::StrJoin(b.span<int64_t>(), ","), "]"); }

// Prints every step of a distributed dataset: one line per step, one [..] per local replica.
void PrintSteps(const std::string& title, const sluice::DistributedDataset<Batch>& dist) {
  std::printf("%s\n", title.c_str());
  auto it = dist.MakeIterator();
  while (auto step = it.GetNextAsOptional()) {
    std::string line = "   ";
    for (const Batch& piece : step->LocalResults()) absl::StrAppend(&line, " ", Show(piece));
    std::printf("%s\n", line.c_str());
  }
  if (!it.status().ok()) std::printf("    error: %s\n", it.status().ToString().c_str());
}

}  // namespace

int main() {
  // 1. Rebatch, dynamic batch size (no drop_remainder): each batch is cut into N pieces of ceil(b/N).
  //    The guide's example: range(8).batch(4) over 3 replicas -> [0,1] [2,3] [] | [4,5] [6,7] [].
  MirroredStrategy three(3);
  PrintSteps("range(8).batch(4), 3 replicas (dynamic):", three.DistributeDataset(sluice::Range(8).Batch(4)));
  // A short final batch over 2 replicas: [4] [5].
  MirroredStrategy two(2);
  PrintSteps("range(6).batch(4), 2 replicas (partial last batch):",
             two.DistributeDataset(sluice::Range(6).Batch(4)));

  // 2. Rebatch, static batch size (drop_remainder): G mod N replicas get ceil(G/N), the rest floor(G/N).
  PrintSteps("range(14).batch(7, drop_remainder), 2 replicas (static):",
             two.DistributeDataset(sluice::Range(14).Batch(7, true)));

  // 3. Multi-worker: 2 workers (threads here) x 2 replicas, G = 7 static, DATA sharding; the workers agree
  //    on the end of data. Each global step consumes exactly 7 elements across the 4 replicas.
  {
    auto agreement = std::make_shared<sluice::InProcessWorkerAgreement>(2);
    std::vector<std::string> lines(2);
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        MirroredStrategy strategy(/*replicas_per_worker=*/2, /*num_workers=*/2, /*worker_index=*/w, agreement);
        DistributeOptions options;
        options.auto_shard_policy = AutoShardPolicy::kData;
        auto dist = strategy.DistributeDataset(sluice::Range(14).Batch(7, true), options);
        auto it = dist.MakeIterator();
        while (auto step = it.GetNextAsOptional()) {
          absl::StrAppend(&lines[w], "   ", Show((*step)[0]), " ", Show((*step)[1]));
        }
      });
    }
    for (std::thread& t : workers) t.join();
    std::printf("2 workers x 2 replicas, range(14).batch(7, drop_remainder), DATA:\n");
    for (int w = 0; w < 2; ++w) std::printf("  worker %d:%s\n", w, lines[w].c_str());
  }

  // 4. Auto-shard policies: AUTO picks FILE for a file-based source, DATA otherwise; FILE with fewer files
  //    than workers is an error that says to use DATA.
  {
    std::vector<std::string> files;
    for (int i = 0; i < 4; ++i) {
      files.push_back(absl::StrCat("/tmp/sluice_distributed_input_", ::getpid(), "_", i, ".txt"));
      std::ofstream(files.back()) << "line-" << i << "a\nline-" << i << "b\n";
    }
    MirroredStrategy worker1(/*replicas_per_worker=*/1, /*num_workers=*/2, /*worker_index=*/1);
    std::printf("auto-shard (worker 1 of 2):\n");
    std::printf("  Range:      %s\n", worker1.DistributeDataset(sluice::Range(8).Batch(2)).stats().c_str());
    auto text = worker1.DistributeDataset(sluice::TextLines(files).Batch(2));
    std::printf("  TextLines:  %s\n", text.stats().c_str());
    std::string mine;
    auto it = text.MakeIterator();
    while (auto step = it.GetNextAsOptional()) absl::StrAppend(&mine, " [", absl::StrJoin((*step)[0], ","), "]");
    std::printf("    worker 1 reads files 1 and 3:%s\n", mine.c_str());
    MirroredStrategy eight(1, 8, 0);
    DistributeOptions file;
    file.auto_shard_policy = AutoShardPolicy::kFile;
    std::printf("  FILE, 4 files, 8 workers: %s\n",
                eight.DistributeDataset(sluice::TextLines(files).Batch(2), file).status().ToString().c_str());
    for (const std::string& f : files) std::remove(f.c_str());
  }

  // 5. Partial batches keep dtype and inner shape: a final Tensor batch of 1 row over 3 replicas.
  {
    sluice::Tensor last = sluice::Tensor::Zeros(sluice::DType::kFloat32, sluice::Shape({1, 28, 28}));
    auto it = three.DistributeDataset(sluice::FromVector<sluice::Tensor>({last})).MakeIterator();
    std::printf("partial Tensor batch over 3 replicas, element_spec %s:\n", it.ElementSpec().DebugString().c_str());
    while (auto step = it.GetNextAsOptional()) {
      for (const sluice::Tensor& t : step->LocalResults()) {
        std::printf("   %s%s\n", std::string(sluice::DTypeName(t.dtype())).c_str(), t.shape().DebugString().c_str());
      }
    }
  }

  // 6. Reordering outputs: enumerate the inputs, run the step on every replica, put results back by index.
  {
    auto ds = sluice::Range(10).Map([](int64_t x) { return x * x; }).Enumerate().Batch(4);
    auto it = three.DistributeDataset(ds).MakeIterator();
    std::map<int64_t, int64_t> outputs;
    while (auto step = it.GetNextAsOptional()) {
      auto results = three.Run(
          [](int /*replica*/, const std::pair<sluice::Tensor, sluice::Tensor>& piece) {
            // Enumerate's (index, value) pairs batch into an index tensor and a value tensor.
            std::vector<std::pair<int64_t, int64_t>> out;
            std::span<const int64_t> indices = piece.first.span<int64_t>();
            std::span<const int64_t> values = piece.second.span<int64_t>();
            for (size_t i = 0; i < indices.size(); ++i)
              out.emplace_back(indices[i], values[i] + 1);  // the "model"
            return out;
          },
          *step);
      for (const auto& piece : results.LocalResults()) {
        for (const auto& [index, value] : piece) outputs[index] = value;
      }
    }
    std::string line;
    for (const auto& [index, value] : outputs) absl::StrAppend(&line, " ", value);
    std::printf("outputs in input order (x*x + 1):%s\n", line.c_str());
  }
  return 0;
}
