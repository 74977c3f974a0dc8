// `sluice bench checkpoint`: resuming an iterator mid-epoch from its checkpoint (Iterator::SaveBlocking,
// Dataset::RestoreIterator; docs/checkpoint.md) against what a user without iterator checkpoints does to
// resume, as PyTorch DataLoader users do: build the iterator again and skip the elements already consumed.
// The metric is the time until the first element after the cut is back, in microseconds (lower is
// better; the ratio is rebuild+skip / sluice). sluice's side also reports the state's bytes and the save's
// microseconds.
//
// Cases (the pipelines of issue 17 and benchmarks/ops/checkpoint_benchmark.cc):
// - a file pipeline: TFRecord(3 generated files of 1 KiB records) -> Map(record to a uint8 Tensor) ->
//   Batch(16) -> Prefetch(64), full and compact (Options::compact_checkpoints);
// - Shuffle(10,000) of 1 KiB strings, full and compact;
// - a deterministic Map with 64 parallel calls, full and compact.
// --size: input elements consumed before the cut (records, strings, integers); the epoch goes on after it
// (the files hold half as many records again, the other pipelines twice the cut). The baseline's skip
// grows with the cut; sluice's restore does not, except a compact Shuffle's (it replays every draw).
// Each sluice run consumes up to the cut, waits for the async buffers to fill (as they are behind a
// training step), saves, destroys the iterator (the job stops) and restores. Every restored first element
// and every baseline's is checked against an uninterrupted run's element at the cut.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/dataset.h"
#include "sluice/io/tensor.h"
#include "sluice/io/tfrecord.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {
namespace {

constexpr int64_t kCheckpointDefaultCut = 500000;
constexpr int64_t kCheckpointRecordBytes = 1024;
constexpr int64_t kCheckpointBatch = 16;
constexpr int64_t kCheckpointPrefetch = 64;
constexpr int64_t kCheckpointShuffleBuffer = 10000;
constexpr uint64_t kCheckpointShuffleSeed = 7;
constexpr int64_t kCheckpointParallelCalls = 64;
constexpr int kCheckpointFiles = 3;
// Long enough for Prefetch(64) and 64 parallel calls to fill on a busy 2-core machine.
constexpr auto kCheckpointFillWait = std::chrono::milliseconds(100);

double MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// Records and strings carry their index in their first 8 bytes, so a mismatch can say which it got.
int64_t LeadingIndex(const void* bytes, size_t size) {
  int64_t index = -1;
  if (size >= sizeof index) std::memcpy(&index, bytes, sizeof index);
  return index;
}

std::string DescribeElement(const Tensor& batch) {
  return absl::StrCat("the batch from record ", LeadingIndex(batch.raw_data(), batch.num_bytes()));
}
std::string DescribeElement(const std::string& s) {
  return absl::StrCat("the string of element ", LeadingIndex(s.data(), s.size()));
}
std::string DescribeElement(int64_t x) { return absl::StrCat("the value ", x); }

// `count` records of kCheckpointRecordBytes, numbered from `first`, the rest of each record varied bytes
// (xorshift) so that nothing downstream can shortcut runs of zeros.
absl::Status WriteNumberedRecords(const std::string& path, int64_t first, int64_t count) {
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
  if (!writer.ok()) return writer.status();
  std::string record(kCheckpointRecordBytes, '\0');
  uint64_t state = 88172645463325252ull ^ static_cast<uint64_t>(first);
  for (int64_t i = first; i < first + count; ++i) {
    std::memcpy(record.data(), &i, sizeof i);
    for (size_t j = sizeof i; j < record.size(); j += 8) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      std::memcpy(record.data() + j, &state, std::min<size_t>(8, record.size() - j));
    }
    if (absl::Status s = writer->Write(record); !s.ok()) return s;
  }
  return writer->Close();
}

struct RecordToTensor {
  Tensor operator()(const std::string& record) const {
    Tensor t = Tensor::Empty(DType::kUInt8, Shape({static_cast<int64_t>(record.size())}));
    std::memcpy(t.raw_data(), record.data(), record.size());
    return t;
  }
};

struct KiBString {
  std::string operator()(int64_t x) const {
    std::string s(kCheckpointRecordBytes, static_cast<char>('a' + x % 26));
    std::memcpy(s.data(), &x, sizeof x);
    return s;
  }
};

struct Affine {
  int64_t operator()(int64_t x) const { return x * 3 + 1; }
};

// One case: a pipeline and where it is cut.
template <class T>
struct CheckpointCase {
  std::string name;
  Dataset<T> dataset;
  int64_t cut = 0;           // elements of T consumed before the cut
  std::string unit;          // what an element is, for the note
  bool compact = false;      // sluice's side saves and restores with Options::compact_checkpoints
  bool async = false;        // has buffers that pool threads fill: wait for them before the save
  int thread_pool_size = 0;  // --threads, or 0: the default pool
};

// The next element, or why there is none.
template <class T>
absl::StatusOr<T> NextElement(Iterator<T>& it) {
  auto next = it.NextBlocking();
  if (!next.ok()) return next.status();
  if (!next->has_value()) return absl::OutOfRangeError("the pipeline ended before the cut");
  return std::move(**next);
}

template <class T>
absl::Status SkipElements(Iterator<T>& it, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    absl::StatusOr<T> x = NextElement(it);
    if (!x.ok()) return x.status();
  }
  return absl::OkStatus();
}

template <class T>
absl::Status CheckResumedElement(const T& got, const T& expected, const CheckpointCase<T>& c,
                                 const char* who) {
  if (got == expected) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(who, " gave ", DescribeElement(got), " right after the cut (",
                                          c.cut, " ", c.unit, "), where the uninterrupted run gives ",
                                          DescribeElement(expected)));
}

template <class T>
absl::StatusOr<Sample> SluiceRestore(const CheckpointCase<T>& c, const T& expected) {
  Options options;
  options.compact_checkpoints = c.compact;
  options.thread_pool_size = c.thread_pool_size;
  std::string state;
  double save_us = 0;
  {
    Iterator<T> it = c.dataset.MakeIterator(options);
    if (absl::Status s = SkipElements(it, c.cut); !s.ok()) return s;
    if (c.async) std::this_thread::sleep_for(kCheckpointFillWait);
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> saved = it.SaveBlocking();
    save_us = MicrosSince(start);
    if (!saved.ok()) return saved.status();
    state = std::move(*saved);
  }  // the job stops: its iterator is gone before the restore
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Iterator<T>> restored = c.dataset.RestoreIterator(state, options);
  if (!restored.ok()) return restored.status();
  absl::StatusOr<T> first = NextElement(*restored);
  const double restore_us = MicrosSince(start);
  if (!first.ok()) return first.status();
  if (absl::Status s = CheckResumedElement(*first, expected, c, "the restored iterator"); !s.ok()) return s;
  Sample sample;
  sample.value = restore_us;
  sample.extra["state_bytes"] = static_cast<double>(state.size());
  sample.extra["save_us"] = save_us;
  return sample;
}

// Without checkpoints: a new iterator (plain options: such a user has no compact mode to pay for) that
// pulls and drops the elements consumed before the cut.
template <class T>
absl::StatusOr<Sample> RebuildAndSkip(const CheckpointCase<T>& c, const T& expected) {
  Options options;
  options.thread_pool_size = c.thread_pool_size;
  const auto start = std::chrono::steady_clock::now();
  Iterator<T> it = c.dataset.MakeIterator(options);
  if (absl::Status s = SkipElements(it, c.cut); !s.ok()) return s;
  absl::StatusOr<T> first = NextElement(it);
  const double us = MicrosSince(start);
  if (!first.ok()) return first.status();
  if (absl::Status s = CheckResumedElement(*first, expected, c, "rebuild+skip"); !s.ok()) return s;
  Sample sample;
  sample.value = us;
  return sample;
}

// The element at the cut, from an iterator that is never saved.
template <class T>
absl::StatusOr<T> UninterruptedElement(const CheckpointCase<T>& c) {
  Options options;
  options.thread_pool_size = c.thread_pool_size;
  Iterator<T> it = c.dataset.MakeIterator(options);
  if (absl::Status s = SkipElements(it, c.cut); !s.ok()) return s;
  return NextElement(it);
}

template <class T>
absl::Status RunCheckpointCase(const BenchConfig& config, const CheckpointCase<T>& c,
                               ScenarioResult* result) {
  ReportProgress(config, absl::StrCat(c.name, ": the uninterrupted run"));
  absl::StatusOr<T> expected = UninterruptedElement(c);
  if (!expected.ok()) {
    return absl::Status(expected.status().code(),
                        absl::StrCat(c.name, ", uninterrupted run: ", expected.status().message()));
  }
  CaseResult out;
  out.name = c.name;
  out.metric = "us";
  out.higher_is_better = false;
  absl::Status s = RunAlternating(config,
                                  {{"sluice", [&] { return SluiceRestore(c, *expected); }},
                                   {"rebuild+skip", [&] { return RebuildAndSkip(c, *expected); }}},
                                  &out);
  if (!s.ok()) return s;
  out.note = absl::StrCat("cut after ", c.cut, " ", c.unit, "; sluice: restore + first element");
  result->cases.push_back(std::move(out));
  return absl::OkStatus();
}

absl::StatusOr<ScenarioResult> RunCheckpoint(const BenchConfig& config) {
  const int64_t cut_records = config.size.value_or(kCheckpointDefaultCut);
  const int pool = config.threads;
  ScenarioResult result;
  result.scenario = "checkpoint";
  result.parameters.emplace_back("cut", absl::StrCat(cut_records, " input elements"));
  result.parameters.emplace_back(
      "threads", pool > 0 ? absl::StrCat(pool) : absl::StrCat("default pool (", BenchThreads(config), ")"));
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));

  // The file pipeline's data: half as much again after the cut (disk and page cache are the limit here),
  // at least two Prefetch buffers' worth, in whole batches, over 3 files.
  const int64_t cut_batches = std::max<int64_t>(1, cut_records / kCheckpointBatch);
  const int64_t records =
      (cut_batches + std::max<int64_t>(cut_batches / 2, 2 * kCheckpointPrefetch)) * kCheckpointBatch;
  absl::StatusOr<ScopedTempDir> dir = ScopedTempDir::Create(config.work_dir);
  if (!dir.ok()) return dir.status();
  std::vector<std::string> files;
  for (int i = 0; i < kCheckpointFiles; ++i) {
    const int64_t first = records * i / kCheckpointFiles;
    const int64_t last = records * (i + 1) / kCheckpointFiles;
    files.push_back(absl::StrCat(dir->path(), "/records-", i, ".tfrecord"));
    ReportProgress(config,
                   absl::StrCat("checkpoint: writing ", files.back(), " (", last - first, " records)"));
    if (absl::Status s = WriteNumberedRecords(files.back(), first, last - first); !s.ok()) return s;
  }

  const auto file_pipeline = TFRecord(files)
                                 .Map(RecordToTensor{}, "record_to_tensor")
                                 .Batch(kCheckpointBatch)
                                 .Prefetch(kCheckpointPrefetch);
  for (bool compact : {false, true}) {
    CheckpointCase<Tensor> c{.name = compact ? "file pipeline, compact" : "file pipeline, full",
                             .dataset = file_pipeline,
                             .cut = cut_batches,
                             .unit = absl::StrCat("batches (", cut_batches * kCheckpointBatch, " records)"),
                             .compact = compact,
                             .async = true,
                             .thread_pool_size = pool};
    if (absl::Status s = RunCheckpointCase(config, c, &result); !s.ok()) return s;
  }

  const auto shuffle = Range(2 * cut_records + kCheckpointShuffleBuffer)
                           .Map(KiBString{}, "kib_string")
                           .Shuffle(kCheckpointShuffleBuffer, kCheckpointShuffleSeed);
  for (bool compact : {false, true}) {
    CheckpointCase<std::string> c{.name = compact ? "Shuffle(10k), compact" : "Shuffle(10k), full",
                                  .dataset = shuffle,
                                  .cut = cut_records,
                                  .unit = "elements",
                                  .compact = compact,
                                  .thread_pool_size = pool};
    if (absl::Status s = RunCheckpointCase(config, c, &result); !s.ok()) return s;
  }

  for (bool compact : {false, true}) {
    CheckpointCase<int64_t> parallel{
        .name = compact ? "parallel Map(64), compact" : "parallel Map(64), full",
        .dataset = Range(2 * cut_records).Map(Affine{}, kCheckpointParallelCalls, true, "affine"),
        .cut = cut_records,
        .unit = "elements",
        .compact = compact,
        .async = true,
        .thread_pool_size = pool};
    if (absl::Status s = RunCheckpointCase(config, parallel, &result); !s.ok()) return s;
  }

  result.notes.push_back(absl::StrCat(
      "file pipeline: ", records, " records of ", kCheckpointRecordBytes, " B in ", kCheckpointFiles,
      " files -> Map(to Tensor) -> Batch(", kCheckpointBatch, ") -> Prefetch(", kCheckpointPrefetch,
      "), cut after ", cut_batches, " batches; Shuffle of 1 KiB strings; parallel Map deterministic"));
  result.notes.push_back(
      "rebuild+skip: a new iterator that drops the elements before the cut (resuming without checkpoints)");
  return result;
}

}  // namespace

Scenario CheckpointScenario() {
  Scenario s;
  s.name = "checkpoint";
  s.description = "resume mid-epoch: restore a checkpoint (full, compact) vs rebuild and skip";
  s.size_unit = "input elements consumed before the cut";
  s.default_size = kCheckpointDefaultCut;
  s.run = RunCheckpoint;
  return s;
}

}  // namespace sluice::tools
