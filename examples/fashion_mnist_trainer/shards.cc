#include "shards.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace fashion_mnist {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kManifest = "manifest.txt";
constexpr absl::string_view kTmpSuffix = ".tmp";

// What `sluice convert fashion-mnist` names its shards: SPLIT-00000-of-00008.tfrecord[.gz|.zlib].
bool LooksLikeShard(absl::string_view name) {
  return (absl::StartsWith(name, "train-") || absl::StartsWith(name, "test-")) &&
         absl::StrContains(name, ".tfrecord");
}

std::string ConvertHint(const std::string& dir) {
  return absl::StrCat("convert into an empty folder, or run `sluice convert fashion-mnist --out ", dir,
                      " --force` after removing the old shards");
}

}  // namespace

absl::StatusOr<ShardSet> FindShards(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("no data folder ", dir, " (run `sluice convert fashion-mnist --out ",
                                            dir, "`)"));
  }
  // Every shard-like file in the folder, with its size: checked against the manifest below.
  ShardSet set;
  std::map<std::string, uintmax_t> on_disk;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!LooksLikeShard(name)) continue;
    if (absl::EndsWith(name, kTmpSuffix)) {
      set.ignored.push_back(absl::StrCat(dir, "/", name));
      continue;
    }
    std::error_code size_error;
    on_disk[name] = entry.is_regular_file(size_error) ? entry.file_size(size_error) : 0;
  }
  if (ec) return absl::UnavailableError(absl::StrCat("cannot list ", dir, ": ", ec.message()));
  std::sort(set.ignored.begin(), set.ignored.end());

  const std::string manifest_path = absl::StrCat(dir, "/", kManifest);
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) {
    if (on_disk.empty()) {
      return absl::NotFoundError(absl::StrCat("no Fashion-MNIST shards in ", dir,
                                              " (run `sluice convert fashion-mnist --out ", dir, "`)"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " has shard files (", on_disk.begin()->first, ", ...) but no ", kManifest,
        ": an interrupted conversion, or files from elsewhere; run `sluice convert fashion-mnist --out ", dir,
        "`"));
  }
  std::map<std::string, int64_t> listed;  // name -> records
  bool format_seen = false;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    if (parts[0] == "format") {
      if (parts.size() != 2 || parts[1] != "1") {
        return absl::FailedPreconditionError(absl::StrCat(
            manifest_path, ": line ", line_number, " is \"", line, "\"; this trainer reads format 1"));
      }
      format_seen = true;
      continue;
    }
    if (parts[0] != "file") continue;  // options and sources: the converter's business
    int64_t records = 0;
    uint64_t bytes = 0;
    if (parts.size() != 5 || (parts[1] != "train" && parts[1] != "test") ||
        !absl::SimpleAtoi(parts[3], &records) || !absl::SimpleAtoi(parts[4], &bytes)) {
      return absl::FailedPreconditionError(absl::StrCat(
          manifest_path, ": line ", line_number, " is \"", line,
          "\", not \"file SPLIT NAME RECORDS BYTES\""));
    }
    const std::string name(parts[2]);
    const auto found = on_disk.find(name);
    if (found == on_disk.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, "/", name, " is listed in ", kManifest, " but is not in the folder; ", ConvertHint(dir)));
    }
    if (found->second != bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, "/", name, " has ", found->second, " bytes but ", kManifest, " records ", bytes,
          ": the folder changed since it was converted; ", ConvertHint(dir)));
    }
    listed[name] = records;
    const std::string path = absl::StrCat(dir, "/", name);
    if (parts[1] == "train") {
      set.train.push_back(path);
      set.train_records += records;
    } else {
      set.test.push_back(path);
      set.test_records += records;
    }
  }
  if (!format_seen) {
    return absl::FailedPreconditionError(
        absl::StrCat(manifest_path, " has no \"format 1\" line: not written by `sluice convert fashion-mnist`"));
  }
  for (const auto& [name, size] : on_disk) {
    if (listed.count(name) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " mixes shard sets: ", name, " is not in its ", kManifest, " (which lists ", listed.size(),
          " files), so it is left from another conversion; training on both would see images twice. ",
          "Remove the files the manifest does not list, or ", ConvertHint(dir)));
    }
  }
  std::sort(set.train.begin(), set.train.end());
  std::sort(set.test.begin(), set.test.end());
  return set;
}

}  // namespace fashion_mnist
