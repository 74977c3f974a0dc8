#include "sluice/ops/file_sources.h"

#include <glob.h>

#include <algorithm>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/engine/task.h"
#include "sluice/ops/shuffle.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/record_readers.h"

namespace sluice::ops {
namespace {

// The records of files[position.index] from position.offset on, then of the files after it. The position
// is plain state, updated when an element is delivered; the reader's own (ReaderPosition) says where the
// element after each one starts, errors included.
class RecordFileStream final : public Stream<std::string> {
 public:
  RecordFileStream(const std::string& op, std::vector<std::string> files, RecordFormat format,
                   Compression compression, FixedLengthLayout layout, ReadMode read_mode, int64_t buffer_size,
                   SourcePosition start)
      : files_(std::move(files)),
        format_(format),
        compression_(compression),
        layout_(layout),
        read_mode_(read_mode),
        buffer_size_(buffer_size),
        position_(start) {
    const int64_t count = static_cast<int64_t>(files_.size());
    if (start.index < 0 || start.index > count || (start.index == count && start.offset != 0)) {
      stash_ = absl::InvalidArgumentError(absl::StrCat(op, ": cannot start at position {", start.index, ", ",
                                                       start.offset, "}: the stream reads ", count, " files"));
      after_stash_ = SourcePosition{count, 0};
    }
  }

  PollState Poll(absl::StatusOr<std::string>* out) override {
    if (stash_.has_value()) {
      *out = std::move(*stash_);
      stash_.reset();
      position_ = after_stash_;
      return PollState::kReady;
    }
    return position_.index >= static_cast<int64_t>(files_.size()) ? PollState::kEnd : PollState::kPending;
  }
  Task<void> WaitReady() override { return Pull(this); }
  std::optional<SourcePosition> position() const override { return position_; }

 private:
  static Task<void> Pull(RecordFileStream* self) {
    while (!self->stash_.has_value() && self->position_.index < static_cast<int64_t>(self->files_.size())) {
      if (!self->reader_open_) self->OpenReader();
      std::optional<absl::StatusOr<Record>> next = co_await self->reader_.Next();
      if (!next.has_value()) {
        self->CloseReader();
        self->position_ = SourcePosition{self->position_.index + 1, 0};
        continue;
      }
      if (next->ok()) {
        self->stash_ = std::string((*next)->str());
      } else {
        self->stash_ = std::move(*next).status();
      }
      const ReaderPosition& after = *self->reader_position_;
      if (after.ended) {
        // Nothing more comes from this file: the next element is the next file's.
        self->CloseReader();
        self->after_stash_ = SourcePosition{self->position_.index + 1, 0};
      } else {
        self->after_stash_ = SourcePosition{self->position_.index, after.next_offset};
      }
    }
  }

  void OpenReader() {
    const std::string& file = files_[static_cast<size_t>(position_.index)];
    ReadOptions io;
    io.mode = read_mode_;
    if (buffer_size_ > 0) io.block_size = static_cast<size_t>(buffer_size_);
    // Every record a view into its block: Pull copies it into the element's std::string and drops the
    // view at once, so a block is pinned for one record at most and the reader's own copy is saved.
    io.min_zero_copy_bytes = 0;
    io.position = reader_position_;
    if (format_ == RecordFormat::kTFRecord) {
      TFRecordReaderOptions options;
      options.compression = compression_;
      options.start_offset = position_.offset;
      reader_ = ReadTFRecords(DefaultReactor(), file, options, io);
    } else if (format_ == RecordFormat::kFixedLength) {
      FixedLengthRecordOptions options;
      options.record_bytes = layout_.record_bytes;
      options.header_bytes = layout_.header_bytes;
      options.footer_bytes = layout_.footer_bytes;
      options.compression = compression_;
      options.start_offset = position_.offset;
      options.io = io;
      reader_ = ReadFixedLengthRecords(DefaultReactor(), file, options);
    } else {
      TextLineOptions options;
      options.compression = compression_;
      options.start_offset = position_.offset;
      options.io = io;
      reader_ = ReadTextLines(DefaultReactor(), file, options);
    }
    reader_open_ = true;
  }
  // Destroying a reader joins its reads: this runs on the consumer's side, never on the reactor's thread.
  void CloseReader() {
    reader_ = AsyncGenerator<absl::StatusOr<Record>>();
    reader_open_ = false;
  }

  std::vector<std::string> files_;
  RecordFormat format_;
  Compression compression_;
  FixedLengthLayout layout_;
  ReadMode read_mode_;
  int64_t buffer_size_;
  SourcePosition position_;     // of the next element delivered
  SourcePosition after_stash_;  // position_ once stash_ is delivered
  std::optional<absl::StatusOr<std::string>> stash_;
  std::shared_ptr<ReaderPosition> reader_position_ = std::make_shared<ReaderPosition>();
  // Declared last: destroyed first, while everything it may still read is alive.
  AsyncGenerator<absl::StatusOr<Record>> reader_;
  bool reader_open_ = false;
};

// The order ShuffleNode gives `n` names with a buffer of all of them, in pass `pass` (ListFiles has always
// shuffled that way; the order is rebuilt here so that a pass can be started at any index).
std::vector<size_t> ShuffledOrder(size_t n, uint64_t seed, uint64_t pass) {
  SplitMix64 rng(ShufflePassSeed(seed, pass));
  std::vector<size_t> buffer(n);
  std::iota(buffer.begin(), buffer.end(), size_t{0});
  std::vector<size_t> order;
  order.reserve(n);
  while (!buffer.empty()) {
    const size_t pick = static_cast<size_t>(rng.Uniform(buffer.size()));
    order.push_back(buffer[pick]);
    if (pick != buffer.size() - 1) buffer[pick] = buffer.back();
    buffer.pop_back();
  }
  return order;
}

// One pass of ListFiles: names[order[i]] (names[i] without a shuffle) from `next` on.
class NameStream final : public Stream<std::string> {
 public:
  NameStream(std::shared_ptr<const std::vector<std::string>> names, std::vector<size_t> order, uint64_t pass,
             size_t next)
      : names_(std::move(names)), order_(std::move(order)), pass_(pass), next_(next) {}
  PollState Poll(absl::StatusOr<std::string>* out) override {
    if (!error_.ok()) {
      *out = std::move(error_);
      error_ = absl::OkStatus();
      return PollState::kReady;
    }
    if (next_ >= names_->size()) return PollState::kEnd;
    *out = (*names_)[order_.empty() ? next_ : order_[next_]];
    ++next_;
    return PollState::kReady;
  }
  std::optional<SourcePosition> position() const override {
    return SourcePosition{static_cast<int64_t>(next_), pass_};
  }
  void Fail(absl::Status error) {
    error_ = std::move(error);
    next_ = names_->size();
  }

 private:
  std::shared_ptr<const std::vector<std::string>> names_;
  std::vector<size_t> order_;  // empty: the names' own order
  uint64_t pass_;
  size_t next_;
  absl::Status error_;
};

}  // namespace

// The key function: see the class comment in sluice/ops/file_sources.h.
FileListSource::~FileListSource() = default;

absl::StatusOr<std::vector<std::string>> MatchFiles(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t matches{};
    int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    if (rc == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
    }
    ::globfree(&matches);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      return absl::InternalError(absl::StrCat("ListFiles: cannot expand pattern '", pattern, "'"));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ListFiles: no files matched pattern: ", absl::StrJoin(patterns, ", ")));
  }
  return files;
}

std::string_view ReadModeName(ReadMode mode) {
  switch (mode) {
    case ReadMode::kAuto:
      return "auto";
    case ReadMode::kRead:
      return "read";
    case ReadMode::kMmap:
      return "mmap";
  }
  return "?";
}

absl::StatusOr<ReadMode> ParseReadMode(std::string_view name) {
  for (ReadMode mode : {ReadMode::kAuto, ReadMode::kRead, ReadMode::kMmap}) {
    if (name == ReadModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown read mode '", std::string(name), "' (auto, read or mmap)"));
}

std::vector<Param> RecordFileNode::params() const {
  std::vector<Param> params = {{"files", files_}, {"compression", std::string(CompressionName(compression_))}};
  if (format_ == RecordFormat::kFixedLength) {
    params.push_back({"record_bytes", static_cast<int64_t>(layout_.record_bytes)});
    params.push_back({"header_bytes", static_cast<int64_t>(layout_.header_bytes)});
    params.push_back({"footer_bytes", static_cast<int64_t>(layout_.footer_bytes)});
  }
  params.push_back({"read_mode", std::string(ReadModeName(read_mode_))});
  // Only when set, so graphs and checkpoints of sources without it stay as they were.
  if (buffer_size_ > 0) params.push_back({"buffer_size", buffer_size_});
  return params;
}

std::unique_ptr<Stream<std::string>> RecordFileNode::MakeStream(IteratorContextPtr context) const {
  return MakeStreamAt(std::move(context), SourcePosition{});
}

std::unique_ptr<Stream<std::string>> RecordFileNode::MakeStreamAt(IteratorContextPtr context,
                                                                  SourcePosition position) const {
  return std::make_unique<RecordFileStream>(std::string(op_name()), FilesForContext(this, files_, *context),
                                            format_, compression_, layout_, read_mode_, buffer_size_,
                                            position);
}

std::vector<std::string> FilesForContext(const OpNode* node, const std::vector<std::string>& files,
                                         const IteratorContext& context) {
  const IteratorContext::FileShard& shard = context.file_shard;
  if (!shard.Cuts(node)) return files;
  std::vector<std::string> mine;
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int64_t>(i) % shard.num_shards == shard.index) mine.push_back(files[i]);
  }
  return mine;
}

ListFilesNode::ListFilesNode(std::vector<std::string> files, bool shuffle, std::optional<uint64_t> seed)
    : files_(std::move(files)), shuffle_(shuffle), seed_(seed) {}

std::vector<Param> ListFilesNode::params() const {
  std::vector<Param> p = {{"files", files_}, {"shuffle", shuffle_}};
  if (seed_) p.push_back({"seed", static_cast<int64_t>(*seed_)});
  return p;
}

std::unique_ptr<Stream<std::string>> ListFilesNode::MakeStream(IteratorContextPtr context) const {
  return MakeNameStream(*context, std::nullopt);
}

std::unique_ptr<Stream<std::string>> ListFilesNode::MakeStreamAt(IteratorContextPtr context,
                                                                 SourcePosition position) const {
  return MakeNameStream(*context, position);
}

std::unique_ptr<Stream<std::string>> ListFilesNode::MakeNameStream(const IteratorContext& context,
                                                                   std::optional<SourcePosition> position) const {
  auto names = std::make_shared<const std::vector<std::string>>(FilesForContext(this, files_, context));
  // Each new pass (epoch) of the iterator gets a new order; one started at a saved pass is followed by the
  // pass after it. An iterator's shuffles are all over its one share, so one counter per node suffices.
  IteratorState& state = *context.state;
  const IteratorState::NodeKey key{this, weak_from_this()};
  uint64_t pass = 0;
  uint64_t seed = 0;
  if (shuffle_) {
    seed = seed_ ? *seed_ : state.Seed(key);
    if (!position.has_value()) {
      pass = state.BeginPass(key);
    } else if (context.options.compact_checkpoints) {
      // A compact mark may be older than the saved pass counter (a Prefetch above a Repeat had begun
      // later passes, whose elements the restore reads again): the passes after it count on from it.
      pass = position->offset;
      state.RewindPass(key, pass);
    } else {
      pass = position->offset;
      state.ResumePass(key, pass);
    }
  }
  const size_t count = names->size();
  std::vector<size_t> order;
  // The position saves the pass index; its number (by epoch) is what seeds the order.
  if (shuffle_ && count > 1) order = ShuffledOrder(count, seed, state.PassNumber(pass));
  if (!position.has_value()) return std::make_unique<NameStream>(std::move(names), std::move(order), pass, 0);
  if (position->index < 0 || static_cast<uint64_t>(position->index) > count || (!shuffle_ && position->offset != 0)) {
    auto stream = std::make_unique<NameStream>(std::move(names), std::move(order), pass, 0);
    stream->Fail(absl::InvalidArgumentError(absl::StrCat("ListFiles: cannot start at position {", position->index,
                                                         ", ", position->offset, "}: the list has ", count,
                                                         " names", shuffle_ ? "" : " and no shuffle passes")));
    return stream;
  }
  return std::make_unique<NameStream>(std::move(names), std::move(order), pass,
                                       static_cast<size_t>(position->index));
}

}  // namespace sluice::ops
