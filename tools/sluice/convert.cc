#include "tools/sluice/convert.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tools/sluice/idx.h"
#include "sluice/io/example.h"
#include "sluice/io/tfrecord.h"

namespace sluice::tools {
namespace {

constexpr uint32_t kImageSide = 28;
constexpr size_t kImageBytes = kImageSide * kImageSide;
constexpr int64_t kNumClasses = 10;
constexpr int kMaxShards = 100000;  // five-digit shard numbers in the file names
constexpr const char* kManifestName = "manifest.txt";
constexpr const char* kTmpSuffix = ".tmp";

struct SplitSpec {
  const char* split;
  const char* images;
  const char* labels;
};

constexpr SplitSpec kSplits[] = {
    {"train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
    {"test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
};

struct SourceFile {
  std::string path;
  uint64_t size = 0;
};

struct SplitSources {
  SourceFile images;
  SourceFile labels;
};

// errno may be 0 after a failed iostream operation; ErrnoToStatus(0) would be OK, so that case is Unknown.
absl::Status ErrnoError(int err, absl::string_view what) {
  if (err == 0) return absl::UnknownError(what);
  return absl::ErrnoToStatus(err, what);
}

absl::Status FsError(const std::error_code& ec, absl::string_view what) {
  // std::filesystem reports POSIX errors in the generic category, whose values are errno values.
  return absl::ErrnoToStatus(ec.value(), what);
}

absl::StatusOr<SourceFile> FindSource(const std::string& dir, const std::string& base) {
  const std::string gz = absl::StrCat(dir, "/", base, ".gz");
  const std::string plain = absl::StrCat(dir, "/", base);
  for (const std::string* path : {&gz, &plain}) {
    struct stat st;
    if (::stat(path->c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        return absl::InvalidArgumentError(absl::StrCat(*path, ": not a regular file"));
      }
      return SourceFile{*path, static_cast<uint64_t>(st.st_size)};
    }
    if (errno != ENOENT) return absl::ErrnoToStatus(errno, absl::StrCat(*path, ": cannot stat"));
  }
  return absl::NotFoundError(
      absl::StrCat("fashion-mnist source file missing: neither ", gz, " nor ", plain, " exists"));
}

absl::Status CheckSourceDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("fashion-mnist source directory ", dir,
                                              " does not exist (install the Debian package "
                                              "dataset-fashion-mnist, or pass --source DIR)"));
    }
    return absl::ErrnoToStatus(err, absl::StrCat("fashion-mnist source directory ", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("fashion-mnist source ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

std::string Describe(const io::IdxArray& a) {
  std::string dims;
  for (size_t i = 0; i < a.dims.size(); ++i) absl::StrAppend(&dims, i == 0 ? "" : "x", a.dims[i]);
  return absl::StrCat("magic ", a.magic(), " (", io::IdxTypeName(a.type), ", ", a.dims.size(), " dims ", dims,
                      ")");
}

absl::Status ValidateSplit(const SplitSources& src, const io::IdxArray& images, const io::IdxArray& labels) {
  if (images.type != io::IdxType::kUint8 || images.dims.size() != 3 || images.dims[1] != kImageSide ||
      images.dims[2] != kImageSide) {
    return absl::InvalidArgumentError(
        absl::StrCat(src.images.path,
                     ": expected Fashion-MNIST images, IDX magic 2051 (uint8, 3 dims N x 28 x 28); found ",
                     Describe(images)));
  }
  if (labels.type != io::IdxType::kUint8 || labels.dims.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        src.labels.path, ": expected Fashion-MNIST labels, IDX magic 2049 (uint8, 1 dim N); found ",
        Describe(labels)));
  }
  if (images.dims[0] != labels.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat("fashion-mnist: ", src.images.path, " has ",
                                                   images.dims[0], " images but ", src.labels.path, " has ",
                                                   labels.dims[0], " labels"));
  }
  for (size_t i = 0; i < labels.bytes.size(); ++i) {
    const int64_t label = static_cast<unsigned char>(labels.bytes[i]);
    if (label >= kNumClasses) {
      return absl::InvalidArgumentError(absl::StrCat(src.labels.path, ": label at index ", i, " is ", label,
                                                     ", outside the Fashion-MNIST classes 0..9"));
    }
  }
  return absl::OkStatus();
}

absl::string_view CompressionSuffix(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "";
    case Compression::kGzip:
      return ".gz";
    case Compression::kZlib:
      return ".zlib";
  }
  return "";
}

absl::string_view CompressionFlagName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZlib:
      return "zlib";
  }
  return "?";
}

int TestShards(const ConvertOptions& options) {
  return options.test_shards == 0 ? options.shards : options.test_shards;
}

// The part of the manifest that must match for an earlier output to be reused: format, options that
// change the bytes written, and the source files' sizes (a changed package gives a new conversion).
std::string ManifestIdentity(const ConvertOptions& options, const SplitSources (&sources)[2]) {
  std::string s = "# sluice convert fashion-mnist: the shards below are complete when this file exists\n";
  absl::StrAppend(&s, "format 1\n");
  absl::StrAppend(&s, "features image:bytes(784) label:int64 height:int64 width:int64\n");
  absl::StrAppend(&s, "compression ", CompressionFlagName(options.compression), "\n");
  absl::StrAppend(&s, "limit ", options.limit, "\n");
  absl::StrAppend(&s, "shards train ", options.shards, " test ", TestShards(options), "\n");
  for (const SplitSources& src : sources) {
    absl::StrAppend(&s, "source ", src.images.path, " ", src.images.size, "\n");
    absl::StrAppend(&s, "source ", src.labels.path, " ", src.labels.size, "\n");
  }
  return s;
}

std::string FileLine(const ConvertedFile& f) {
  return absl::StrCat("file ", f.split, " ", std::filesystem::path(f.path).filename().string(), " ",
                      f.records, " ", f.bytes, "\n");
}

void AddToTotals(ConvertSummary* summary, const ConvertedFile& f) {
  (f.split == "train" ? summary->train_records : summary->test_records) += f.records;
  summary->total_bytes += f.bytes;
  summary->files.push_back(f);
}

// Reads an existing manifest; returns a summary when it matches `identity` and every shard it lists is
// on disk with the recorded size, else std::nullopt (any doubt means convert again).
std::optional<ConvertSummary> ReuseExisting(const std::string& out_dir, const std::string& manifest_path,
                                            const std::string& identity, size_t expected_files) {
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.size() < identity.size() || text.compare(0, identity.size(), identity) != 0) return std::nullopt;
  ConvertSummary summary;
  summary.skipped = true;
  summary.manifest_path = manifest_path;
  const std::string rest = text.substr(identity.size());
  for (absl::string_view line : absl::StrSplit(rest, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    ConvertedFile f;
    if (parts.size() != 5 || parts[0] != "file" || !absl::SimpleAtoi(parts[3], &f.records) ||
        !absl::SimpleAtoi(parts[4], &f.bytes)) {
      return std::nullopt;
    }
    f.split = parts[1];
    f.path = absl::StrCat(out_dir, "/", parts[2]);
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(f.path, ec);
    if (ec || size != f.bytes) return std::nullopt;
    AddToTotals(&summary, f);
  }
  if (summary.files.size() != expected_files) return std::nullopt;
  return summary;
}

absl::Status WriteShard(const std::string& final_path, Compression compression, const io::IdxArray& images,
                        const io::IdxArray& labels, int64_t begin, int64_t end) {
  const std::string tmp = absl::StrCat(final_path, kTmpSuffix);
  TFRecordWriterOptions writer_options;
  writer_options.compression = compression;
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(tmp, writer_options);
  if (!writer.ok()) return writer.status();
  absl::Status status;
  for (int64_t i = begin; i < end && status.ok(); ++i) {
    const std::string_view pixels(images.bytes.data() + static_cast<size_t>(i) * kImageBytes, kImageBytes);
    const int64_t label = static_cast<unsigned char>(labels.bytes[static_cast<size_t>(i)]);
    const std::string record = ExampleBuilder()
                                   .AddBytes("image", {pixels})
                                   .AddInt64s("label", {label})
                                   .AddInt64s("height", {int64_t{kImageSide}})
                                   .AddInt64s("width", {int64_t{kImageSide}})
                                   .Serialize();
    status = writer->Write(record);
  }
  if (absl::Status closed = writer->Close(); status.ok()) status = closed;
  if (status.ok() && std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", final_path));
  }
  if (!status.ok()) std::remove(tmp.c_str());
  return status;
}

absl::Status WriteManifest(const std::string& manifest_path, const std::string& text) {
  const std::string tmp = absl::StrCat(manifest_path, kTmpSuffix);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoError(errno, absl::StrCat(tmp, ": cannot open for writing"));
    errno = 0;
    out << text;
    out.flush();
    if (!out) return ErrnoError(errno, absl::StrCat(tmp, ": write failed"));
  }
  if (std::rename(tmp.c_str(), manifest_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot rename ", tmp, " to ", manifest_path));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const ConvertOptions& options) {
  if (options.out_dir.empty())
    return absl::InvalidArgumentError("fashion-mnist: the output directory is empty");
  if (options.shards < 1 || options.shards > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("fashion-mnist: shards must be 1..", kMaxShards, ", got ", options.shards));
  }
  if (options.test_shards < 0 || options.test_shards > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrCat("fashion-mnist: test shards must be 1..", kMaxShards,
                                                   " (or 0 for the same as shards), got ",
                                                   options.test_shards));
  }
  if (options.limit < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("fashion-mnist: limit must be -1 (all) or >= 0, got ", options.limit));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ShardFileName(const std::string& split, int index, int count, Compression compression) {
  return absl::StrFormat("%s-%05d-of-%05d.tfrecord%s", split, index, count,
                         std::string(CompressionSuffix(compression)));
}

absl::StatusOr<ConvertSummary> ConvertFashionMnist(const ConvertOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (absl::Status s = CheckSourceDir(options.source_dir); !s.ok()) return s;
  SplitSources sources[2];
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<SourceFile> images = FindSource(options.source_dir, kSplits[i].images);
    if (!images.ok()) return images.status();
    absl::StatusOr<SourceFile> labels = FindSource(options.source_dir, kSplits[i].labels);
    if (!labels.ok()) return labels.status();
    sources[i] = {*std::move(images), *std::move(labels)};
  }

  const std::string manifest_path = absl::StrCat(options.out_dir, "/", kManifestName);
  const std::string identity = ManifestIdentity(options, sources);
  if (!options.force) {
    std::optional<ConvertSummary> existing = ReuseExisting(
        options.out_dir, manifest_path, identity, static_cast<size_t>(options.shards + TestShards(options)));
    if (existing) {
      existing->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return *std::move(existing);
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) return FsError(ec, absl::StrCat("cannot create output directory ", options.out_dir));
  // The old manifest goes first: from here until the new one is renamed into place, the directory does
  // not claim to be complete.
  if (std::remove(manifest_path.c_str()) != 0 && errno != ENOENT) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot remove ", manifest_path));
  }

  ConvertSummary summary;
  summary.manifest_path = manifest_path;
  for (int s = 0; s < 2; ++s) {
    absl::StatusOr<io::IdxArray> images = io::ReadIdxFile(sources[s].images.path);
    if (!images.ok()) return images.status();
    absl::StatusOr<io::IdxArray> labels = io::ReadIdxFile(sources[s].labels.path);
    if (!labels.ok()) return labels.status();
    if (absl::Status st = ValidateSplit(sources[s], *images, *labels); !st.ok()) return st;

    int64_t n = images->dims[0];
    if (options.limit >= 0 && options.limit < n) n = options.limit;
    const int shards = s == 0 ? options.shards : TestShards(options);
    for (int k = 0; k < shards; ++k) {
      ConvertedFile f;
      f.split = kSplits[s].split;
      f.path = absl::StrCat(options.out_dir, "/", ShardFileName(f.split, k, shards, options.compression));
      const int64_t begin = n * k / shards;
      const int64_t end = n * (k + 1) / shards;
      if (absl::Status st = WriteShard(f.path, options.compression, *images, *labels, begin, end); !st.ok()) {
        return st;
      }
      f.records = end - begin;
      const uintmax_t size = std::filesystem::file_size(f.path, ec);
      if (ec) return FsError(ec, absl::StrCat(f.path, ": cannot stat the written shard"));
      f.bytes = size;
      AddToTotals(&summary, f);
    }
  }

  std::string manifest = identity;
  for (const ConvertedFile& f : summary.files) manifest += FileLine(f);
  if (absl::Status s = WriteManifest(manifest_path, manifest); !s.ok()) return s;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

int RunConvert(const ConvertOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ConvertSummary> summary = ConvertFashionMnist(options);
  if (!summary.ok()) {
    err << "sluice convert: " << summary.status().ToString() << "\n";
    return 1;
  }
  if (summary->skipped) {
    out << absl::StrFormat(
        "sluice convert: %s is up to date (%d files, %d train + %d test records, %d bytes; "
        "--force rewrites)\n",
        options.out_dir, summary->files.size(), summary->train_records, summary->test_records,
        summary->total_bytes);
    return 0;
  }
  for (const ConvertedFile& f : summary->files) {
    out << absl::StrFormat("  %s  %d records  %d bytes\n", f.path, f.records, f.bytes);
  }
  out << absl::StrFormat(
      "sluice convert: wrote %d files to %s: %d train + %d test records, %d bytes, %.2f s (compression %s)\n",
      summary->files.size(), options.out_dir, summary->train_records, summary->test_records,
      summary->total_bytes, summary->seconds, std::string(CompressionFlagName(options.compression)));
  return 0;
}

}  // namespace sluice::tools
