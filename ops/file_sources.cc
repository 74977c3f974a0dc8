#include "sluice/ops/file_sources.h"

#include <glob.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/ops/from_vector.h"
#include "sluice/ops/generator_source.h"
#include "sluice/ops/shuffle.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/record_readers.h"

namespace sluice::ops {

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

AsyncGenerator<absl::StatusOr<std::string>> ReadRecordsAsStrings(std::vector<std::string> files,
                                                                 RecordFormat format, Compression compression,
                                                                 FixedLengthLayout layout) {
  for (std::string& file : files) {
    AsyncGenerator<absl::StatusOr<Record>> records;
    if (format == RecordFormat::kTFRecord) {
      TFRecordReaderOptions options;
      options.compression = compression;
      records = ReadTFRecords(DefaultReactor(), file, options);
    } else if (format == RecordFormat::kFixedLength) {
      FixedLengthRecordOptions options;
      options.record_bytes = layout.record_bytes;
      options.header_bytes = layout.header_bytes;
      options.footer_bytes = layout.footer_bytes;
      options.compression = compression;
      records = ReadFixedLengthRecords(DefaultReactor(), file, options);
    } else {
      TextLineOptions options;
      options.compression = compression;
      records = ReadTextLines(DefaultReactor(), file, options);
    }
    while (std::optional<absl::StatusOr<Record>> record = co_await records.Next()) {
      // GCC12 PR100611: build yielded values in named locals, not as temporaries in the co_yield.
      absl::StatusOr<std::string> element = record->ok()
                                                ? absl::StatusOr<std::string>(std::string((*record)->str()))
                                                : absl::StatusOr<std::string>(std::move(*record).status());
      co_yield std::move(element);
    }
  }
}

std::vector<Param> RecordFileNode::params() const {
  std::string names = absl::StrJoin(files_, ",");
  std::vector<Param> params = {{"files", names}, {"compression", std::string(CompressionName(compression_))}};
  if (format_ == RecordFormat::kFixedLength) {
    params.push_back({"record_bytes", static_cast<int64_t>(layout_.record_bytes)});
    params.push_back({"header_bytes", static_cast<int64_t>(layout_.header_bytes)});
    params.push_back({"footer_bytes", static_cast<int64_t>(layout_.footer_bytes)});
  }
  return params;
}

std::unique_ptr<Stream<std::string>> RecordFileNode::MakeStream(IteratorContextPtr context) const {
  return std::make_unique<GeneratorStream<std::string>>(
      ReadRecordsAsStrings(FilesForContext(this, files_, *context), format_, compression_, layout_));
}

std::vector<std::string> FilesForContext(const OpNode* node, const std::vector<std::string>& files,
                                         const IteratorContext& context) {
  const IteratorContext::FileShard& shard = context.file_shard;
  if (shard.target != node || shard.num_shards <= 1) return files;
  std::vector<std::string> mine;
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int64_t>(i) % shard.num_shards == shard.index) mine.push_back(files[i]);
  }
  return mine;
}

ListFilesNode::ListFilesNode(std::vector<std::string> files, bool shuffle, std::optional<uint64_t> seed)
    : files_(std::move(files)), shuffle_(shuffle), seed_(seed ? *seed : RandomSeed()), seeded_(seed.has_value()) {
  names_ = MakeNames(files_);
}

NodePtr<std::string> ListFilesNode::MakeNames(std::vector<std::string> files) const {
  int64_t count = static_cast<int64_t>(files.size());
  NodePtr<std::string> names =
      std::make_shared<FromVectorNode<std::string>>(std::make_shared<const std::vector<std::string>>(std::move(files)));
  if (!shuffle_ || count == 0) return names;
  return std::make_shared<ShuffleNode<std::string>>(std::move(names), count, seed_, seeded_, /*reshuffle=*/true);
}

std::vector<Param> ListFilesNode::params() const {
  std::vector<Param> p = {{"files", absl::StrJoin(files_, ",")}, {"shuffle", shuffle_}};
  if (seeded_) p.push_back({"seed", static_cast<int64_t>(seed_)});
  return p;
}

std::unique_ptr<Stream<std::string>> ListFilesNode::MakeStream(IteratorContextPtr context) const {
  const IteratorContext::FileShard& shard = context->file_shard;
  if (shard.target != this || shard.num_shards <= 1) return names_->MakeStream(std::move(context));
  NodePtr<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    NodePtr<std::string>& slot = sharded_[{shard.num_shards, shard.index}];
    if (!slot) slot = MakeNames(FilesForContext(this, files_, *context));
    names = slot;
  }
  return names->MakeStream(std::move(context));

}

}  // namespace sluice::ops
