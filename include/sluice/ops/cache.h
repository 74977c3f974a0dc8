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
// - Checkpoints (docs/checkpoint.md): save and restore exactly. A memory cache saves its published
//   contents (as tf.data's memory cache does) and the elements its writing pass has cached so far; a file
//   cache saves the elements it has read, or the partial file it is writing, with the input's state.
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
  // A writer that continues a partial cache a checkpoint saved: `contents` (as Contents() gave them,
  // holding `records` records) become the start of the file. DataLoss when they are not such a partial
  // file; otherwise what Open returns.
  static absl::StatusOr<std::unique_ptr<Writer>> Resume(const std::string& filename,
                                                        std::string_view element_type,
                                                        std::string_view contents, uint64_t records);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  absl::Status Append(std::string_view payload);
  // Flushes, publishes the index (so later passes read the cache) and releases the lock.
  absl::Status Finish();
  // Drops the partial cache and releases the lock (what the destructor does).
  void Abandon();
  // Everything appended so far, header included, as the finished file would start (for a checkpoint).
  absl::StatusOr<std::string> Contents() const;
  uint64_t records() const { return records_; }

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
  // Records in the file, as its index says.
  uint64_t records() const { return records_; }
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
  DatasetSpec element_spec() const override { return input_->element_spec(); }
  std::vector<Param> params() const override { return {{"filename", filename_}}; }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {input_}; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    if (filename_.empty()) {
      std::shared_ptr<MemoryCacheState<T>> memory = Memory(*context);
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

  // Checkpoints. Memory: a published cache is the node's resource, saved whether or not the node has a
  // stream (a later pass replays it); a stream saves (kind, replay index, elements cached by this pass,
  // input open), the input at /0 while open. File: see FileStream::Save.
  absl::StatusOr<std::unique_ptr<Stream<T>>> RestoreStream(IteratorContextPtr context,
                                                           const CheckpointReader& reader,
                                                           const std::string& path) const override {
    if constexpr (!HasElementCodec<T>) {
      return reader.Unsupported(path);
    } else {
      if (!filename_.empty()) {
        auto stream = std::make_unique<FileStream>(input_, std::move(context), filename_);
        if (absl::Status s = stream->Restore(reader, path); !s.ok()) return s;
        return stream;
      }
      uint64_t kind = 0;
      uint64_t next = 0;
      std::vector<T> pending;
      bool input_open = false;
      if (absl::Status s = reader.ReadState(path, &kind, &next, &pending, &input_open); !s.ok()) return s;
      std::shared_ptr<MemoryCacheState<T>> memory = Memory(*context);
      if (kind == kReplaying) {
        std::shared_ptr<const std::vector<T>> completed;
        {
          std::lock_guard<std::mutex> lock(memory->mu);
          completed = memory->completed;
        }
        if (completed == nullptr || next > completed->size() || !pending.empty() || input_open) {
          return reader.Corrupt(path, absl::DataLossError(absl::StrCat("replay at ", next, " of ",
                                                                       completed ? completed->size() : 0)));
        }
        auto stream = std::make_unique<ReplayStream>(std::move(completed));
        stream->next_ = static_cast<size_t>(next);
        return stream;
      }
      if (kind != kWriting || next != 0) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat("kind ", kind)));
      }
      std::unique_ptr<Stream<T>> input;
      if (input_open) {
        auto restored = input_->RestoreStream(std::move(context), reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input = std::move(*restored);
      }
      auto stream = std::make_unique<MemoryWriteStream>(std::move(input), std::move(memory));
      stream->pending_ = std::move(pending);
      return stream;
    }
  }
  absl::StatusOr<std::optional<std::string>> SaveResource(const IteratorState& state) const override {
    if (!filename_.empty()) return std::nullopt;
    std::shared_ptr<MemoryCacheState<T>> memory = state.template FindResource<MemoryCacheState<T>>(*this);
    if (memory == nullptr) return std::nullopt;
    std::shared_ptr<const std::vector<T>> completed;
    {
      std::lock_guard<std::mutex> lock(memory->mu);
      completed = memory->completed;
    }
    if (completed == nullptr) return std::nullopt;
    if constexpr (!HasElementCodec<T>) {
      return absl::FailedPreconditionError("its cached elements have no ElementCodec");
    } else {
      std::string bytes;
      EncodeElement(*completed, &bytes);
      return bytes;
    }
  }
  absl::Status RestoreResource(IteratorState* state, std::string_view bytes) const override {
    if constexpr (!HasElementCodec<T>) {
      return absl::FailedPreconditionError("restoring a Cache of elements without an ElementCodec");
    } else {
      auto values = std::make_shared<std::vector<T>>();
      if (absl::Status s = DecodeElement(bytes, values.get()); !s.ok()) return s;
      if (!filename_.empty()) return absl::DataLossError("a file cache keeps no resource");
      const IteratorState::NodeKey key{this, this->weak_from_this()};
      std::shared_ptr<MemoryCacheState<T>> memory = state->template Resource<MemoryCacheState<T>>(
          key, [] { return std::make_shared<MemoryCacheState<T>>(); });
      std::lock_guard<std::mutex> lock(memory->mu);
      if (!memory->completed) memory->completed = std::move(values);
      return absl::OkStatus();
    }
  }

 private:
  static constexpr uint64_t kWriting = 0;
  static constexpr uint64_t kReplaying = 1;

  std::shared_ptr<MemoryCacheState<T>> Memory(const IteratorContext& context) const {
    const IteratorState::NodeKey key{this, this->weak_from_this()};
    return context.state->template Resource<MemoryCacheState<T>>(
        key, [] { return std::make_shared<MemoryCacheState<T>>(); });
  }

  class ReplayStream final : public Stream<T> {
   public:
    explicit ReplayStream(std::shared_ptr<const std::vector<T>> values) : values_(std::move(values)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      if (next_ >= values_->size()) return PollState::kEnd;
      *out = (*values_)[next_++];
      return PollState::kReady;
    }
    // The values are the node's resource, saved with it.
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, kReplaying, static_cast<uint64_t>(next_), std::vector<T>(), false);
        return Stream<T>::SaveResult(absl::OkStatus());
      }
    }

   private:
    std::shared_ptr<const std::vector<T>> values_;

   public:  // set by RestoreStream
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
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      if constexpr (!HasElementCodec<T>) {
        return Stream<T>::SaveResult(writer->Unsupported(path, "its elements have no ElementCodec"));
      } else {
        writer->WriteState(path, kWriting, uint64_t{0}, pending_, input_ != nullptr);
        if (!input_) return Stream<T>::SaveResult(absl::OkStatus());
        return input_->Save(std::move(writer), ChildNodePath(path, 0));
      }
    }

   private:
    std::unique_ptr<Stream<T>> input_;
    std::shared_ptr<MemoryCacheState<T>> state_;

   public:  // set by RestoreStream
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
    // State: mode, elements read (kRead) and the file's record count, the partial file and its record
    // count (kWrite while writing), a write error not yet yielded, input open; the input at /0 while
    // open. A partial file is removed when its writer goes, so the state carries its bytes.
    Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) override {
      std::optional<std::string> partial;
      uint64_t written = 0;
      if (mode_ == Mode::kWrite && writer_) {
        absl::StatusOr<std::string> contents = writer_->Contents();
        if (!contents.ok()) return Stream<T>::SaveResult(AnnotateCache(contents.status()));
        partial = std::move(*contents);
        written = writer_->records();
      }
      const uint64_t file_records = mode_ == Mode::kRead ? reader_->records() : 0;
      writer->WriteState(path, static_cast<uint64_t>(mode_), index_, file_records, partial, written,
                         write_error_, input_ != nullptr);
      if (!input_) return Stream<T>::SaveResult(absl::OkStatus());
      return input_->Save(std::move(writer), ChildNodePath(path, 0));
    }

    // Continues from what Save wrote at `path`. FailedPrecondition when the cache file a reading pass
    // was saved from is gone or holds another number of elements.
    absl::Status Restore(const CheckpointReader& reader, const std::string& path) {
      uint64_t mode = 0;
      int64_t index = 0;
      uint64_t file_records = 0;
      std::optional<std::string> partial;
      uint64_t written = 0;
      absl::Status write_error;
      bool input_open = false;
      if (absl::Status s = reader.ReadState(path, &mode, &index, &file_records, &partial, &written,
                                            &write_error, &input_open);
          !s.ok()) {
        return s;
      }
      const bool writing = mode == static_cast<uint64_t>(Mode::kWrite);
      if (mode > static_cast<uint64_t>(Mode::kEnded) || mode == static_cast<uint64_t>(Mode::kFailed) ||
          index < 0 || (!writing && (partial || input_open || !write_error.ok())) ||
          (partial && !input_open)) {
        return reader.Corrupt(path, absl::DataLossError(absl::StrCat("mode ", mode)));
      }
      mode_ = static_cast<Mode>(mode);
      index_ = index;
      if (mode_ == Mode::kRead) return RestoreRead(path, file_records);
      if (!writing) return absl::OkStatus();
      write_error_ = std::move(write_error);
      if (input_open) {
        auto restored = input_node_->RestoreStream(context_, reader, ChildNodePath(path, 0));
        if (!restored.ok()) return restored.status();
        input_ = std::move(*restored);
      }
      // A cache completed or locked by another writer meanwhile: this pass goes on without writing.
      if (!partial || cache_file::IsComplete(filename_)) return absl::OkStatus();
      absl::StatusOr<std::unique_ptr<cache_file::Writer>> resumed =
          cache_file::Writer::Resume(filename_, ElementTypeName<T>(), *partial, written);
      if (resumed.ok()) {
        writer_ = std::move(*resumed);
      } else if (resumed.status().code() == absl::StatusCode::kDataLoss) {
        return reader.Corrupt(path, resumed.status());
      } else if (resumed.status().code() != absl::StatusCode::kAlreadyExists && write_error_.ok()) {
        write_error_ = AnnotateCache(resumed.status());  // as a write error: yielded once, then uncached
      }
      return absl::OkStatus();
    }

   private:
    enum class Mode { kStart, kRead, kWrite, kFailed, kEnded };

    absl::Status RestoreRead(const std::string& path, uint64_t file_records) {
      auto fail = [&](const std::string& why) {
        return absl::FailedPreconditionError(
            absl::StrCat("restoring Cache at ", path, ": the checkpoint was saved reading element ", index_,
                         " of cache file '", filename_, "' (", file_records, " elements): ", why));
      };
      absl::StatusOr<std::unique_ptr<cache_file::Reader>> opened =
          cache_file::Reader::Open(filename_, ElementTypeName<T>());
      if (!opened.ok()) return fail(std::string(opened.status().message()));
      reader_ = std::move(*opened);
      if (reader_->records() != file_records || static_cast<uint64_t>(index_) > file_records) {
        return fail(absl::StrCat("it now holds ", reader_->records()));
      }
      for (int64_t i = 0; i < index_; ++i) {
        absl::StatusOr<std::optional<std::string_view>> record = reader_->Next();
        if (!record.ok()) return fail(std::string(record.status().message()));
      }
      return absl::OkStatus();
    }

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
