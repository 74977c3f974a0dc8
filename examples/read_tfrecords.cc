// Reads existing TFRecord files of tf.train.Example with a sluice pipeline: list the shards, interleave
// their records, parse them, shuffle and batch; prints a few decoded batches and the throughput.
//
//   build/bin/read_tfrecords [GLOB] [--compression gzip|zlib|none] [--epochs N]
// Default: the TFX Chicago taxi train split in ../shared/data (GZIP).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "sluice/dataset.h"
#include "sluice/io/example.h"
#include "sluice/io/tfrecord.h"

int main(int argc, char** argv) {
  std::string pattern = "../shared/data/tfrecord/tfx_chicago_taxi_csv_example_gen/Split-train/*.gz";
  std::string compression_name = "gzip";
  int epochs = 1;
  CLI::App app("Reads TFRecord files of tf.train.Example with a sluice pipeline.", "read_tfrecords");
  app.add_option("GLOB", pattern, "the files to read")->capture_default_str();
  app.add_option("--compression", compression_name, "none, gzip or zlib; any case")
      ->type_name("C")
      ->capture_default_str()
      ->check([](const std::string& name) {
        return !name.empty() && sluice::ParseCompression(name).ok() ? "" : "must be none, gzip or zlib";
      });
  app.add_option("--epochs", epochs)->type_name("N")->capture_default_str()->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "read_tfrecords: %s\nRun 'read_tfrecords --help' for usage.\n", e.what());
    return 2;
  }
  const sluice::Compression compression = *sluice::ParseCompression(compression_name);

  // Parse two taxi features as variable-length values (some records leave features empty).
  sluice::ParseSpec spec;
  spec.var.push_back(sluice::VarLenFeature{"fare", sluice::DType::kFloat32});
  spec.var.push_back(sluice::VarLenFeature{"trip_seconds", sluice::DType::kInt64});

  auto dataset = sluice::ListFiles({pattern}, /*shuffle=*/true, /*seed=*/1)
                     .Interleave([compression](std::string file) { return sluice::TFRecord({file}, compression); },
                                 /*cycle_length=*/4, /*block_length=*/1, "read_shard")
                     .Map([spec](std::string record) { return sluice::ParseExample(record, spec); }, "parse")
                     .Shuffle(1024, /*seed=*/7)
                     .Batch(256)
                     .Prefetch(2)
                     .Repeat(epochs);
  std::printf("pipeline:\n%s\n", dataset.DebugString().c_str());

  auto start = std::chrono::steady_clock::now();
  sluice::Iterator<sluice::ParsedExample> it = dataset.MakeIterator();
  long records = 0;
  long batches = 0;
  for (absl::StatusOr<sluice::ParsedExample> batch : it) {
    if (!batch.ok()) {
      std::fprintf(stderr, "error: %s\n", batch.status().ToString().c_str());
      return 1;
    }
    // Batch stacks parsed records: var-len values are concatenated with one row length per record.
    const long rows = static_cast<long>(sluice::BatchTraits<sluice::ParsedExample>::Rows(*batch));
    if (batches < 3) {
      std::printf("batch %ld: %ld records; fare=%s trip_seconds=%s\n", batches, rows,
                  batch->var[0].values.DebugString(4).c_str(), batch->var[1].values.DebugString(4).c_str());
    }
    records += rows;
    ++batches;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%ld records in %ld batches, %.3f s, %.0f records/s\n", records, batches, seconds,
              records / seconds);
  return 0;
}
