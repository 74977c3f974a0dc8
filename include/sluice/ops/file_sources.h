// File sources.
// ListFiles(patterns, shuffle, seed): the files matching the glob patterns, as tf.data.Dataset.list_files:
//   sorted and de-duplicated, then (shuffle, the default) shuffled with a buffer of all names, a new order
//   for each pass of an iterator (Shuffle's orders: pass numbers, and the seed of an unseeded ListFiles,
//   are the iterator's own, sluice/ops/iterator_state.h, so every iterator of a seeded ListFiles lists the
//   same sequence of orders and iterators never perturb each other). Patterns are expanded when the
//   dataset is defined; when nothing matches, the dataset's one element is InvalidArgument naming them.
// TFRecord(files, compression): the records of each file in turn, as std::string, through io/'s
//   ReadTFRecords (several large reads in flight, CRCs verified); errors are elements naming the file and
//   offset (see sluice/io/record_readers.h). TextLines(files, compression): the lines of each file.
//   Cardinality: unknown. A RecordFileNode's read_mode (default ReadMode::kAuto, the readers' default)
//   goes to the readers' ReadOptions::mode (sluice/io/sequential_reader.h).
// Params describe each node completely: files as a list of strings (any character survives, commas
//   too), compression ("", "GZIP", "ZLIB"), read_mode ("auto", "read", "mmap"), FixedLengthRecords'
//   record_bytes / header_bytes / footer_bytes, buffer_size only when set; ListFiles' files, shuffle, and
//   seed only when seeded.
// FixedLengthRecords(files, record_bytes, header_bytes, footer_bytes, compression), as
//   tf.data.FixedLengthRecordDataset: per file, skip header_bytes, then records of record_bytes each until
//   footer_bytes remain (skipped); with compression these apply to the decompressed stream. Through io/'s
//   ReadFixedLengthRecords: a body that is not a multiple of record_bytes yields the whole records, then
//   DataLoss naming the file and the offset of the leftover bytes; a file shorter than header + footer is
//   DataLoss. record_bytes <= 0 or a negative header/footer make the dataset one InvalidArgument element.
// Position (sluice/ops/stream.h): every source here is a PositionedSource. A record stream's position() is
//   {file index in the list it reads (its auto-shard share, if any), byte offset of the next record in
//   that file}, updated as each element is delivered (errors too: after a data CRC error the next record;
//   after an error that ends a file, {next file, 0}); {i, 0} is file i from its start (for
//   FixedLengthRecords: its first record, after the header) and {number of files, 0} the end. Until the
//   next file is opened a position may be the end of file i, which resumes the same as {i + 1, 0}.
//   MakeStreamAt(context, {i, offset}) reads file i from that offset (as the readers' start_offset:
//   a bad offset is the reader's error element for that file, naming it, and reading goes on with the
//   next file), then the files after it. ListFiles: {index in this pass's order, pass index}; MakeStreamAt
//   rebuilds that pass's order (the same shuffle) from the index on, and the iterator's later passes
//   continue after it. Unseeded, the order also depends on the seed the iterator drew: resume within the
//   iterator whose position it was (or, later, one whose IteratorState was restored).
//   An index outside the list is InvalidArgument, the stream's one element.
//
//   auto node = std::make_shared<RecordFileNode>(files, RecordFormat::kTFRecord, Compression::kGzip);
//   std::unique_ptr<Stream<std::string>> stream = node->MakeStream(context);
//   ... deliver some elements; SourcePosition saved = *stream->position();
//   std::unique_ptr<Stream<std::string>> resumed = node->MakeStreamAt(context, saved);  // the rest
// Every source here is a FileListSource node: auto-shard by FILE (sluice/distribute/auto_shard.h) names
// it by its node path and tells it through IteratorContext::file_shard to keep files i with
// i mod num_shards == index (ListFiles does so on the sorted list, before its shuffle, so the workers'
// shares are disjoint whatever the seed).
#ifndef SLUICE_OPS_FILE_SOURCES_H_
#define SLUICE_OPS_FILE_SOURCES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/engine/async_generator.h"
#include "sluice/export.h"
#include "sluice/ops/cardinality.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"
#include "sluice/io/sequential_reader.h"
#include "sluice/io/tfrecord.h"

namespace sluice::ops {

// The sorted, de-duplicated matches of every pattern (glob(3)); InvalidArgument when none match.
SLUICE_EXPORT absl::StatusOr<std::vector<std::string>> MatchFiles(const std::vector<std::string>& patterns);

enum class RecordFormat { kTFRecord, kTextLines, kFixedLength };

// "auto", "read", "mmap": a RecordFileNode's read_mode param.
SLUICE_EXPORT std::string_view ReadModeName(ReadMode mode);
// The inverse of ReadModeName; InvalidArgument naming `name` for anything else.
SLUICE_EXPORT absl::StatusOr<ReadMode> ParseReadMode(std::string_view name);

// FixedLengthRecords' layout (unused by the other formats).
struct FixedLengthLayout {
  uint64_t record_bytes = 0;
  uint64_t header_bytes = 0;
  uint64_t footer_bytes = 0;
};

// A node that reads (or lists) a fixed list of files known when the dataset is defined.
// Exported, with its destructor (the key function) in ops/file_sources.cc, for the same reason as OpNode:
// distribute::FindFileSource in the library dynamic_casts to it, also for sources a program defines.
class SLUICE_EXPORT FileListSource {
 public:
  virtual ~FileListSource();
  virtual const std::vector<std::string>& files() const = 0;
};

// Files i of `files` with i mod context->file_shard.num_shards == index when `node` is the shard's target.
SLUICE_EXPORT std::vector<std::string> FilesForContext(const OpNode* node, const std::vector<std::string>& files,
                                                       const IteratorContext& context);

class SLUICE_EXPORT RecordFileNode final : public Node<std::string>,
                                           public FileListSource,
                                           public PositionedSource<std::string> {
 public:
  // buffer_size: bytes per read (the readers' ReadOptions::block_size); 0 = their default.
  RecordFileNode(std::vector<std::string> files, RecordFormat format, Compression compression,
                 FixedLengthLayout layout = {}, ReadMode read_mode = ReadMode::kAuto, int64_t buffer_size = 0)
      : files_(std::move(files)),
        format_(format),
        compression_(compression),
        layout_(layout),
        read_mode_(read_mode),
        buffer_size_(buffer_size) {}
  std::string_view op_name() const override {
    constexpr std::string_view kNames[] = {"TFRecord", "TextLines", "FixedLengthRecords"};
    return kNames[static_cast<int>(format_)];
  }
  std::vector<Param> params() const override;
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::unique_ptr<Stream<std::string>> MakeStream(IteratorContextPtr context) const override;
  std::unique_ptr<Stream<std::string>> MakeStreamAt(IteratorContextPtr context,
                                                    SourcePosition position) const override;
  const std::vector<std::string>& files() const override { return files_; }

 private:
  std::vector<std::string> files_;
  RecordFormat format_;
  Compression compression_;
  FixedLengthLayout layout_;
  ReadMode read_mode_;
  int64_t buffer_size_;
};

// tf.data.Dataset.list_files over already matched, sorted `files` (see dataset.h ListFiles).
class SLUICE_EXPORT ListFilesNode final : public Node<std::string>,
                                          public FileListSource,
                                          public PositionedSource<std::string>,
                                          public std::enable_shared_from_this<ListFilesNode> {
 public:
  ListFilesNode(std::vector<std::string> files, bool shuffle, std::optional<uint64_t> seed);
  std::string_view op_name() const override { return "ListFiles"; }
  std::vector<Param> params() const override;
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return static_cast<int64_t>(files_.size()); }
  std::unique_ptr<Stream<std::string>> MakeStream(IteratorContextPtr context) const override;
  std::unique_ptr<Stream<std::string>> MakeStreamAt(IteratorContextPtr context,
                                                    SourcePosition position) const override;
  const std::vector<std::string>& files() const override { return files_; }
  bool begins_passes() const override { return shuffle_; }
  bool draws_seed() const override { return shuffle_ && !seed_; }

 private:
  std::unique_ptr<Stream<std::string>> MakeNameStream(const IteratorContext& context,
                                                      std::optional<SourcePosition> position) const;

  std::vector<std::string> files_;
  bool shuffle_;
  std::optional<uint64_t> seed_;  // nullopt: drawn per iterator
};

}  // namespace sluice::ops

#endif  // SLUICE_OPS_FILE_SOURCES_H_
