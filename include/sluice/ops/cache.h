// Cache(filename): the input's elements, produced by the input only until one full pass has been seen,
// then replayed from the cache, as tf.data.Dataset.cache.
//
// Contract:
// - filename "" caches in memory. The cache belongs to the iterator (its IteratorState,
//   sluice/ops/iterator_state.h), not to the definition: every epoch of a Repeat within one iterator
//   shares it, and two iterators never share or perturb each other's cache (each runs the input once).
//   (Changed by issue #12: the cache used to belong to the definition, shared by every iterator, as
//   tf.data's memory cache is; a definition is now data another process rebuilds, and holds no state.
//   To reuse elements across iterators or runs, cache to a file.) A pass that runs the input to its end
//   publishes what it saw; the iterator's later passes replay it without running the input. A pass
//   abandoned before the end (a Take downstream) publishes nothing, as tf.data discards a partial cache,
//   so the next pass runs the input again. Passes of one iterator running at once (Zip(c, c)) each fill
//   their own copy; the first to finish publishes.
// - filename non-empty caches in files, which persist across runs (tf.data's file cache):
//   * `filename` holds an element stream header naming the element type (ElementTypeName) and the
//     element format version, then the elements (ElementCodec encoding, each record length-prefixed and
//     CRC32C checked); `filename.index` is written (atomically, by rename) only when a pass completes and
//     marks the cache as usable, and `filename.lockfile` is held by the pass that is writing.
//   * A cache file of another element type ("Cache: cache file '...': element stream holds int64, reader
//     expects string"), of another element format version, or written by an older sluice in an older
//     file format is one FailedPrecondition element naming the file, then the end; the input does not
//     run. Delete the files to rebuild the cache. (Element types without a name are not checked.)
//   * A pass that finds `filename.index` reads the elements from the file and never runs the input.
//     Otherwise it takes the lock and writes while passing the input's elements through; when the input
//     ends it publishes the index and releases the lock. An abandoned pass removes its partial file and
//     the lock, so the partial cache is never used.
//   * A second writer while the lock is held gets one AlreadyExists element ("... is already in use ...
//     lockfile ...", as tf.data's "concurrent caching iterator") and then the end. A lockfile left by a
//     crashed process has the same effect until it is deleted by hand, as in tf.data.
//   * Read errors are elements naming the file and byte offset: DataLoss for a corrupt or truncated cache
//     (the stream ends after it); opening or writing errors name the path and the errno text. A write
//     error mid-pass is yielded once after the element being written, the partial cache is dropped and
//     the pass goes on uncached.
//   * T must have an ElementCodec (sluice/ops/element_codec.h): Dataset::Cache(filename) does not compile
//     otherwise (a static_assert says so), while Dataset::Cache() caches any copyable T in memory.
//   * File I/O is blocking (buffered reads and writes of 1 MiB) in the consumer's Poll: put a Prefetch
//     after the cache to overlap it.
// - Error elements of the input pass through and are not cached (tf.data's cache stores only the
//   elements its input produced successfully), so a replay yields only the good elements.
// - Cardinality: the input's.
// - Threading: several iterators may run at once (publication of the memory cache is under a mutex, the
//   file cache is guarded by its lockfile); each stream has one consumer at a time, as every Stream.
//
//   auto ds = TFRecord(files).Map(Parse).Cache().Repeat(5);  // epochs 2-5 of an iterator come from memory
//   auto on_disk = Range(1000).Cache("/tmp/range.cache");   // later runs read the file
#ifndef SLUICE_OPS_CACHE_H_
#define SLUICE_OPS_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/element_type.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/iterator_state.h"
#include "sluice/ops/op_node.h"

namespace sluice::ops {

namespace cache_file {

// True when `filename.index` exists: a completed file cache.
SLUICE_EXPORT bool IsComplete(const std::string& filename);

// Writes one cache file. Holds `filename.lockfile` from Open until Finish or destruction; destroying an
// unfinished writer removes the partial data file and the lock.
class SLUICE_EXPORT Writer {
 public:
  // AlreadyExists when another writer holds the lock; errno errors naming the path otherwise; nullptr when
  // the cache was completed by another writer before the lock was taken (read it instead). The file
  // starts with an element stream header naming `element_type` (sluice/ops/element_codec.h).
  static absl::StatusOr<std::unique_ptr<Writer>> Open(const std::string& filename, std::string_view element_type);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  absl::Status Append(std::string_view payload);
  // Flushes, publishes the index (so later passes read the cache) and releases the lock.
  absl::Status Finish();
  // Drops the partial cache and releases the lock (what the destructor does).
  void Abandon();

 private:
  Writer(std::string filename, int fd) : filename_(std::move(filename)), fd_(fd) {}
  absl::Status Flush();

  std::string filename_;
  int fd_ = -1;
  bool open_ = true;
  std::string buffer_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;  // written to the file so far, header included
};

// Reads a completed cache file record by record.
class SLUICE_EXPORT Reader {
 public:
  // FailedPrecondition naming the file when it holds another element type than `element_type`, another
  // element format version, or an older cache file format; DataLoss when it is damaged.
  static absl::StatusOr<std::unique_ptr<Reader>> Open(const std::string& filename, std::string_view element_type);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The next record (valid until the next call), std::nullopt after the last, DataLoss naming the file
  // and offset when the file is damaged.
  absl::StatusOr<std::optional<std::string_view>> Next();
  // Offset of the record Next() returned last.
  uint64_t record_offset() const { return record_offset_; }
  const std::string& filename() const { return filename_; }

 private:
  Reader(std::string filename, int fd, uint64_t records, uint64_t size)
      : filename_(std::move(filename)), fd_(fd), records_(records), size_(size) {}
  // Makes `n` bytes available at buffer_[pos_]; false at the end of the file.
  absl::StatusOr<bool> Fill(size_t n);

  std::string filename_;
  int fd_ = -1;
  uint64_t records_ = 0;  // as the index says
  uint64_t size_ = 0;     // as the index says
  uint64_t read_records_ = 0;
  uint64_t file_offset_ = 0;  // of buffer_[0]
  uint64_t record_offset_ = 0;
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
};

}  // namespace cache_file

// The in-memory cache every stream of one CacheNode in one iterator shares (IteratorState's resource).
template <class T>
struct MemoryCacheState {
  std::mutex mu;
  std::shared_ptr<const std::vector<T>> completed;  // null until one pass completes
};

template <class T>
class CacheNode final : public Node<T>, public std::enable_shared_from_this<CacheNode<T>> {
 public:
  static_assert(std::is_copy_constructible_v<T>, "Cache: elements must be copyable (the cache keeps a copy)");

  CacheNode(NodePtr<T> input, std::string filename) : input_(std::move(input)), filename_(std::move(filename)) {}
  std::string_view op_name() const override { return "Cache"; }
  std::vector<Param> params() const override { return {{"filename", filename_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    if (filename_.empty()) {
      const IteratorState::NodeKey key{this, this->weak_from_this()};
      std::shared_ptr<MemoryCacheState<T>> memory = context->state->template Resource<MemoryCacheState<T>>(
          key, [] { return std::make_shared<MemoryCacheState<T>>(); });
      std::shared_ptr<const std::vector<T>> completed;
      {
        std::lock_guard<std::mutex> lock(memory->mu);
        completed = memory->completed;
      }
      if (completed) return std::make_unique<ReplayStream>(std::move(completed));
      return std::make_unique<MemoryWriteStream>(input_->MakeStream(std::move(context)), std::move(memory));
    }
    if constexpr (HasElementCodec<T>) {
      return std::make_unique<FileStream>(input_, std::move(context), filename_);
    } else {
      // Dataset::Cache(filename) rejects such T at compile time; a node built by hand gets an error.
      return MakeErrorSource<T>("Cache", absl::InvalidArgumentError(absl::StrCat(
                                             "Cache: elements have no ElementCodec, cannot cache to '", filename_,
                                             "'")))->MakeStream(std::move(context));
    }
  }

 private:
  class ReplayStream final : public Stream<T> {
   public:
    explicit ReplayStream(std::shared_ptr<const std::vector<T>> values) : values_(std::move(values)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (next_ >= values_->size()) return PollState::kEnd;
      *out = (*values_)[next_++];
      return PollState::kReady;
    }

   private:
    std::shared_ptr<const std::vector<T>> values_;
    size_t next_ = 0;
  };

  class MemoryWriteStream final : public Stream<T> {
   public:
    MemoryWriteStream(std::unique_ptr<Stream<T>> input, std::shared_ptr<MemoryCacheState<T>> state)
        : input_(std::move(input)), state_(std::move(state)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (!input_) return PollState::kEnd;
      PollState state = input_->Poll(out);
      if (state == PollState::kReady) {
        if (out->ok()) pending_.push_back(**out);
      } else if (state == PollState::kEnd) {
        input_.reset();
        auto values = std::make_shared<const std::vector<T>>(std::move(pending_));
        std::lock_guard<std::mutex> lock(state_->mu);
        if (!state_->completed) state_->completed = std::move(values);
      }
      return state;
    }
    Task<void> WaitReady() override { return input_ ? input_->WaitReady() : Stream<T>::WaitReady(); }

   private:
    std::unique_ptr<Stream<T>> input_;
    std::shared_ptr<MemoryCacheState<T>> state_;
    std::vector<T> pending_;
  };

  // Decides at its first Poll whether to read the file or to write it while running the input.
  class FileStream final : public Stream<T> {
   public:
    FileStream(NodePtr<T> input, IteratorContextPtr context, std::string filename)
        : input_node_(std::move(input)), context_(std::move(context)), filename_(std::move(filename)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (mode_ == Mode::kStart) Start(out);
      switch (mode_) {
        case Mode::kStart:
          break;
        case Mode::kFailed:
          mode_ = Mode::kEnded;
          return PollState::kReady;  // Start() put the error in *out
        case Mode::kRead:
          return Read(out);
        case Mode::kWrite:
          return Write(out);
        case Mode::kEnded:
          return PollState::kEnd;
      }
      return PollState::kEnd;
    }
    Task<void> WaitReady() override {
      return mode_ == Mode::kWrite && input_ ? input_->WaitReady() : Stream<T>::WaitReady();
    }

   private:
    enum class Mode { kStart, kRead, kWrite, kFailed, kEnded };

    void Start(absl::StatusOr<T>* out) {
      if (!cache_file::IsComplete(filename_)) {
        absl::StatusOr<std::unique_ptr<cache_file::Writer>> writer = cache_file::Writer::Open(filename_, ElementTypeName<T>());
        if (!writer.ok()) {
          *out = AnnotateCache(writer.status());
          mode_ = Mode::kFailed;
          return;
        }
        if (*writer != nullptr) {
          writer_ = std::move(*writer);
          input_ = input_node_->MakeStream(context_);
          mode_ = Mode::kWrite;
          return;
        }
        // Another pass completed the cache between the check and the lock: read it.
      }
      absl::StatusOr<std::unique_ptr<cache_file::Reader>> reader = cache_file::Reader::Open(filename_, ElementTypeName<T>());
      if (!reader.ok()) {
        *out = AnnotateCache(reader.status());
        mode_ = Mode::kFailed;
        return;
      }
      reader_ = std::move(*reader);
      mode_ = Mode::kRead;
    }

    PollState Read(absl::StatusOr<T>* out) {
      absl::StatusOr<std::optional<std::string_view>> record = reader_->Next();
      if (record.ok() && !record->has_value()) {
        mode_ = Mode::kEnded;
        reader_.reset();
        return PollState::kEnd;
      }
      absl::Status status = record.status();
      if (status.ok()) {
        if (!decoded_) decoded_.emplace();
        status = DecodeElement(**record, &*decoded_);
        if (status.ok()) {
          *out = std::move(*decoded_);
          decoded_.reset();
          ++index_;
          return PollState::kReady;
        }
        status = absl::DataLossError(absl::StrCat("Cache: cannot decode element ", index_, " of cache file '",
                                                  filename_, "' at offset ", reader_->record_offset(), ": ",
                                                  status.message()));
      }
      *out = AnnotateCache(status);
      mode_ = Mode::kEnded;  // a damaged file cannot be trusted past this point
      reader_.reset();
      return PollState::kReady;
    }

    PollState Write(absl::StatusOr<T>* out) {
      if (!write_error_.ok()) {
        *out = std::move(write_error_);
        write_error_ = absl::OkStatus();
        return PollState::kReady;
      }
      if (!input_) return PollState::kEnd;
      PollState state = input_->Poll(out);
      if (state == PollState::kReady) {
        if (out->ok() && writer_) {
          scratch_.clear();
          EncodeElement(**out, &scratch_);
          if (absl::Status s = writer_->Append(scratch_); !s.ok()) DropWriter(s);
        }
      } else if (state == PollState::kEnd) {
        input_.reset();
        if (writer_) {
          absl::Status s = writer_->Finish();
          writer_.reset();
          if (!s.ok()) {
            *out = AnnotateCache(s);
            return PollState::kReady;  // the next Poll ends: input_ is gone
          }
        }
      }
      return state;
    }

    void DropWriter(const absl::Status& status) {
      write_error_ = AnnotateCache(status);
      writer_.reset();  // removes the partial file and the lock
    }

    static absl::Status AnnotateCache(const absl::Status& status) {
      if (absl::StartsWith(status.message(), "Cache")) return status;
      return absl::Status(status.code(), absl::StrCat("Cache: ", status.message()));
    }

    NodePtr<T> input_node_;
    IteratorContextPtr context_;
    std::string filename_;
    Mode mode_ = Mode::kStart;
    std::unique_ptr<Stream<T>> input_;
    std::unique_ptr<cache_file::Writer> writer_;
    std::unique_ptr<cache_file::Reader> reader_;
    std::string scratch_;
    std::optional<T> decoded_;
    absl::Status write_error_;
    int64_t index_ = 0;
  };

  NodePtr<T> input_;
  std::string filename_;
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_CACHE_H_
