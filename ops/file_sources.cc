#include "sluice/ops/file_sources.h"

#include <glob.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/ops/generator_source.h"
#include "sluice/reactor.h"
#include "sluice/record_readers.h"

namespace sluice::ops {

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

std::unique_ptr<Stream<std::string>> RecordFileNode::MakeStream(IteratorContextPtr) const {
  return std::make_unique<GeneratorStream<std::string>>(ReadRecordsAsStrings(files_, format_, compression_, layout_));
}

}  // namespace sluice::ops
