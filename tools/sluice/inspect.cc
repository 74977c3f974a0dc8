#include "tools/sluice/inspect.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/crc32c.h"
#include "sluice/engine/async_generator.h"
#include "sluice/io/example.h"
#include "sluice/engine/reactor.h"
#include "sluice/io/record_readers.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/tfrecord.h"

namespace sluice::tools {
namespace {

struct InspectFlags {
  bool all = false;
  std::optional<Compression> compression;  // unset: detect
  std::vector<std::string> files;
};

// TFRecord files carry no magic number, so detection asks which reading of the first bytes is
// consistent: a valid uncompressed record header (its length CRC matches), else the gzip magic, else a
// zlib header (CMF/FLG check). An empty file reads as uncompressed with no records.
absl::StatusOr<Compression> DetectCompression(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open '", path, "'"));
  std::array<unsigned char, 12> head{};
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  int read_errno = errno;
  ::close(fd);
  if (n < 0) return absl::ErrnoToStatus(read_errno, absl::StrCat("read '", path, "'"));
  if (n == 0) return Compression::kNone;
  if (n == 12) {
    uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(head[8 + i]) << (8 * i);
    if (io::MaskCrc(io::Crc32c(head.data(), 8)) == stored) return Compression::kNone;
  }
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  if (n >= 2 && (head[0] & 0x0f) == 8 && ((head[0] << 8) | head[1]) % 31 == 0) return Compression::kZlib;
  // Nothing matched: read it as uncompressed so the reader reports where framing breaks.
  return Compression::kNone;
}

std::string DescribeValues(const Feature& feature) {
  constexpr size_t kShown = 4;
  std::vector<std::string> shown;
  switch (feature.kind) {
    case FeatureKind::kBytes:
      for (size_t i = 0; i < std::min(kShown, feature.bytes_list.size()); ++i) {
        const std::string& b = feature.bytes_list[i];
        bool printable = std::all_of(b.begin(), b.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
        shown.push_back(printable && b.size() <= 32 ? absl::StrCat("\"", b, "\"")
                                                    : absl::StrCat("<", b.size(), " bytes>"));
      }
      break;
    case FeatureKind::kFloat:
      for (size_t i = 0; i < std::min(kShown, feature.float_list.size()); ++i) {
        shown.push_back(absl::StrCat(feature.float_list[i]));
      }
      break;
    case FeatureKind::kInt64:
      for (size_t i = 0; i < std::min(kShown, feature.int64_list.size()); ++i) {
        shown.push_back(absl::StrCat(feature.int64_list[i]));
      }
      break;
    case FeatureKind::kNone:
      break;
  }
  std::string out = absl::StrCat("[", absl::StrJoin(shown, ", "));
  if (feature.size() > kShown) absl::StrAppend(&out, ", ...");
  return absl::StrCat(out, "]");
}

void PrintFeatures(const Features& features, std::string_view indent) {
  for (const auto& [name, feature] : features) {
    std::printf("%.*s%s: %s, %zu value%s %s\n", static_cast<int>(indent.size()), indent.data(),
                name.c_str(), std::string(FeatureKindName(feature.kind)).c_str(), feature.size(),
                feature.size() == 1 ? "" : "s", DescribeValues(feature).c_str());
  }
}

// Prints what the first record is; returns whether it decoded as an Example or SequenceExample.
void DescribeFirstRecord(std::string_view record) {
  absl::StatusOr<DecodedExample> example = DecodeExample(record, "record 0");
  if (example.ok() && !example->features.empty()) {
    std::printf("  first record: tf.train.Example, %zu features\n", example->features.size());
    PrintFeatures(example->features, "    ");
    return;
  }
  absl::StatusOr<DecodedSequenceExample> sequence = DecodeSequenceExample(record, "record 0");
  if (sequence.ok() && !sequence->feature_lists.empty()) {
    std::printf("  first record: tf.train.SequenceExample, %zu context features, %zu feature lists\n",
                sequence->context.size(), sequence->feature_lists.size());
    PrintFeatures(sequence->context, "    context ");
    for (const auto& [name, steps] : sequence->feature_lists) {
      size_t values = 0;
      for (const Feature& step : steps) values += step.size();
      std::printf("    list %s: %zu steps, %zu values\n", name.c_str(), steps.size(), values);
    }
    return;
  }
  if (example.ok()) {
    std::printf("  first record: tf.train.Example with no features (%zu bytes)\n", record.size());
    return;
  }
  std::printf("  first record: not a tf.train.Example (%zu bytes): %s\n", record.size(),
              std::string(example.status().message()).c_str());
}

struct FileSummary {
  uint64_t records = 0;
  uint64_t payload_bytes = 0;
  uint64_t not_examples = 0;
  std::vector<absl::Status> errors;
};

Task<FileSummary> ScanFile(Reactor* reactor, std::string path, Compression compression, bool all) {
  FileSummary summary;
  TFRecordReaderOptions options;
  options.compression = compression;
  AsyncGenerator<absl::StatusOr<Record>> records = ReadTFRecords(*reactor, path, options);
  while (std::optional<absl::StatusOr<Record>> record = co_await records.Next()) {
    if (!record->ok()) {
      summary.errors.push_back(record->status());
      continue;
    }
    std::string_view bytes((*record)->str().data(), (*record)->size());
    if (summary.records == 0) DescribeFirstRecord(bytes);
    if (all && !DecodeExample(bytes).ok() && !DecodeSequenceExample(bytes).ok()) ++summary.not_examples;
    ++summary.records;
    summary.payload_bytes += bytes.size();
  }
  co_return summary;
}

int InspectFile(Reactor& reactor, const std::string& path, const InspectFlags& flags) {
  std::printf("%s\n", path.c_str());
  absl::StatusOr<FileStat> stat = SyncWait(reactor.Stat(path));
  if (!stat.ok()) {
    std::printf("  error: %s\n", stat.status().ToString().c_str());
    return 1;
  }
  Compression compression = Compression::kNone;
  if (flags.compression) {
    compression = *flags.compression;
  } else {
    absl::StatusOr<Compression> detected = DetectCompression(path);
    if (!detected.ok()) {
      std::printf("  error: %s\n", detected.status().ToString().c_str());
      return 1;
    }
    compression = *detected;
  }
  std::string name(CompressionName(compression));
  std::printf("  compression: %s%s\n", name.empty() ? "NONE" : name.c_str(),
              flags.compression ? "" : " (detected)");
  FileSummary summary = SyncWait(ScanFile(&reactor, path, compression, flags.all));
  std::printf("  records: %llu\n", static_cast<unsigned long long>(summary.records));
  std::printf("  bytes: %llu in the file, %llu of record data\n", static_cast<unsigned long long>(stat->size),
              static_cast<unsigned long long>(summary.payload_bytes));
  if (flags.all) {
    std::printf("  decoded: %llu of %llu records are tf.train.Example or SequenceExample\n",
                static_cast<unsigned long long>(summary.records - summary.not_examples),
                static_cast<unsigned long long>(summary.records));
  }
  if (summary.errors.empty()) {
    std::printf("  crc: ok\n");
    return 0;
  }
  std::printf("  crc: FAILED (%zu error%s)\n", summary.errors.size(), summary.errors.size() == 1 ? "" : "s");
  for (const absl::Status& error : summary.errors) {
    std::printf("  error: %s\n", error.ToString().c_str());
    std::fprintf(stderr, "sluice inspect: %s\n", std::string(error.message()).c_str());
  }
  return 1;
}

absl::StatusOr<InspectFlags> ParseFlags(const std::vector<std::string>& args) {
  InspectFlags flags;
  for (const std::string& arg : args) {
    if (arg == "--all") {
      flags.all = true;
    } else if (arg.rfind("--compression=", 0) == 0) {
      std::string value = arg.substr(std::string_view("--compression=").size());
      if (value == "auto") {
        flags.compression.reset();
      } else if (value == "none") {
        flags.compression = Compression::kNone;
      } else if (value == "gzip") {
        flags.compression = Compression::kGzip;
      } else if (value == "zlib") {
        flags.compression = Compression::kZlib;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--compression takes auto, none, gzip or zlib, not '",
                                                       value, "'"));
      }
    } else if (arg.rfind("--", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", arg));
    } else {
      flags.files.push_back(arg);
    }
  }
  if (flags.files.empty()) return absl::InvalidArgumentError("no FILE given");
  return flags;
}

}  // namespace

int RunInspect(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::fputs(kInspectUsage, stdout);
      return 0;
    }
  }
  absl::StatusOr<InspectFlags> flags = ParseFlags(args);
  if (!flags.ok()) {
    std::fprintf(stderr, "sluice inspect: %s\n\n%s", std::string(flags.status().message()).c_str(), kInspectUsage);
    return 2;
  }
  int exit_code = 0;
  for (const std::string& path : flags->files) {
    exit_code = std::max(exit_code, InspectFile(DefaultReactor(), path, *flags));
  }
  return exit_code;
}

}  // namespace sluice::tools
