// `sluice bench scan`: TFRecord scan throughput, sluice (ReadTFRecords through the reactor, both CRCs of
// every record verified) against fio (io_uring, sequential 1 MiB reads, --invalidate=0 so that it reads
// the page cache as sluice does) and dd (bs=1M, of=/dev/null) on the same files, in GB/s of file bytes.
// The files are read once before the first run so that every side finds them in the page cache. Last, an
// O_DIRECT case compares sluice's direct reads with fio --direct=1 on the 100 KiB-record file (the last
// --data file), when the filesystem allows O_DIRECT (tmpfs does not: the note says so).
//
// Generated data (no --data): rec100, rec1k and rec100k.tfrecord, --size MiB each, of 100 B, 1 KiB and
// 100 KiB records, in a temporary folder removed afterwards. fio reads a file smaller than 1 GiB several
// times per run (--loops), because it times in milliseconds.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sluice/engine/reactor.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/io/record_readers.h"
#include "sluice/io/tfrecord.h"
#include "tools/sluice/bench_process.h"
#include "tools/sluice/bench_scenarios.h"

namespace sluice::tools {
namespace {

constexpr int64_t kDefaultMiB = 256;
constexpr double kToolTimeoutSeconds = 600;
constexpr uint64_t kFioMinBytes = uint64_t{1} << 30;

struct ScanFile {
  std::string name;
  std::string path;
  uint64_t bytes = 0;
  double record_bytes = 0;  // for the plot's x axis; 0 when unknown (user files)
};

absl::Status WriteRecords(const std::string& path, size_t record_bytes, uint64_t total_bytes) {
  absl::StatusOr<TFRecordWriter> writer = TFRecordWriter::Open(path);
  if (!writer.ok()) return writer.status();
  // Varied bytes (xorshift), so that nothing downstream can shortcut runs of zeros.
  std::string payload(record_bytes, '\0');
  uint64_t state = 88172645463325252ull;
  for (uint64_t written = 0; written < total_bytes; written += record_bytes + 16) {
    for (size_t j = 0; j < payload.size(); j += 8) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      std::memcpy(payload.data() + j, &state, std::min<size_t>(8, payload.size() - j));
    }
    if (absl::Status s = writer->Write(payload); !s.ok()) return s;
  }
  return writer->Close();
}

absl::Status Warm(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::vector<char> buffer(size_t{1} << 20);
  ssize_t n;
  while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) {
  }
  const int saved = errno;
  ::close(fd);
  if (n < 0) return absl::ErrnoToStatus(saved, absl::StrCat("read ", path));
  return absl::OkStatus();
}

struct ScanCount {
  uint64_t bytes = 0;
  uint64_t records = 0;
  absl::Status status;
};

Task<ScanCount> Count(AsyncGenerator<absl::StatusOr<Record>> records) {
  ScanCount count;
  for (;;) {
    std::optional<absl::StatusOr<Record>> r = co_await records.Next();
    if (!r.has_value()) break;
    if (!r->ok()) {
      count.status = r->status();
      break;
    }
    count.bytes += (*r)->size() + 16;  // with the framing: the same bytes as the file
    ++count.records;
  }
  co_return count;
}

absl::StatusOr<Sample> SluiceScan(Reactor& reactor, const ScanFile& file, bool direct) {
  ReadOptions io;
  io.direct = direct;
  const auto start = std::chrono::steady_clock::now();
  ScanCount count = SyncWait(Count(ReadTFRecords(reactor, file.path, TFRecordReaderOptions{}, io)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!count.status.ok()) return count.status;
  if (count.bytes != file.bytes) {
    return absl::DataLossError(absl::StrCat(file.path, ": read ", count.bytes, " bytes of ", file.bytes));
  }
  Sample sample;
  sample.value = static_cast<double>(count.bytes) / seconds / 1e9;
  sample.extra["Mrecords/s"] = static_cast<double>(count.records) / seconds / 1e6;
  return sample;
}

absl::StatusOr<Sample> FioScan(const std::string& fio, const ScanFile& file, bool direct) {
  // --mem=mmap: with fio's default malloc'ed buffer it read the page cache at a third of dd's rate on
  // this kind of machine (scripts/bench-scan's note); the faster setting keeps the baseline honest.
  // fio times in milliseconds: small files are read several times over so that its figure has 3 digits.
  const uint64_t loops =
      std::max<uint64_t>(1, (kFioMinBytes + file.bytes - 1) / std::max<uint64_t>(1, file.bytes));
  std::vector<std::string> argv = {
      fio,         "--name=scan", absl::StrCat("--filename=", file.path), "--ioengine=io_uring",
      "--rw=read", "--bs=1M",     absl::StrCat("--loops=", loops),        "--output-format=terse"};
  if (direct) {
    argv.push_back("--direct=1");
  } else {
    argv.push_back("--invalidate=0");
    argv.push_back("--mem=mmap");
  }
  absl::StatusOr<ProcessResult> run = RunProcess(argv, {.timeout_seconds = kToolTimeoutSeconds});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0)
    return absl::InternalError(absl::StrCat("fio exited ", run->exit_code, ": ", run->err));
  // Terse v3: field 7 (from 1) is the read bandwidth in KiB/s.
  std::vector<std::string> fields = absl::StrSplit(run->out, ';');
  double kib_per_s = 0;
  if (fields.size() < 7 || !absl::SimpleAtod(fields[6], &kib_per_s) || kib_per_s <= 0) {
    return absl::InternalError(absl::StrCat("cannot read fio's bandwidth from: ", run->out.substr(0, 200)));
  }
  Sample sample;
  sample.value = kib_per_s * 1024 / 1e9;
  return sample;
}

absl::StatusOr<Sample> DdScan(const std::string& dd, const ScanFile& file) {
  absl::StatusOr<ProcessResult> run =
      RunProcess({dd, absl::StrCat("if=", file.path), "of=/dev/null", "bs=1M"},
                 {.timeout_seconds = kToolTimeoutSeconds});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0)
    return absl::InternalError(absl::StrCat("dd exited ", run->exit_code, ": ", run->err));
  // "268435456 bytes (268 MB, 256 MiB) copied, 0.0234 s, 11.5 GB/s": dd's own bytes and seconds.
  for (absl::string_view line : absl::StrSplit(run->err, '\n')) {
    const size_t copied = line.find(" copied, ");
    if (copied == absl::string_view::npos) continue;
    double bytes = 0, seconds = 0;
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
    absl::string_view after = line.substr(copied + 9);
    if (!absl::SimpleAtod(words[0], &bytes) ||
        !absl::SimpleAtod(after.substr(0, after.find(' ')), &seconds) || seconds <= 0) {
      break;
    }
    Sample sample;
    sample.value = bytes / seconds / 1e9;
    return sample;
  }
  return absl::InternalError(absl::StrCat("cannot read dd's figures from: ", run->err));
}

// Why O_DIRECT cannot be measured on `path`'s filesystem, or "" when it can.
std::string DirectUnsupported(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return absl::StrCat("open(O_DIRECT) of ", path, ": ", std::strerror(errno));
  ::close(fd);
  return "";
}

absl::StatusOr<ScenarioResult> RunScan(const BenchConfig& config) {
  absl::StatusOr<std::string> fio =
      FindTool("fio", config.path, absl::StrCat(kInstallBenchDeps, " (apt-get install fio)"));
  if (!fio.ok()) return absl::FailedPreconditionError(fio.status().message());
  absl::StatusOr<std::string> dd = FindTool("dd", config.path, "apt-get install coreutils");
  if (!dd.ok()) return absl::FailedPreconditionError(dd.status().message());

  const int64_t mib = config.size.value_or(kDefaultMiB);
  ScenarioResult result;
  result.scenario = "scan";
  std::vector<ScanFile> files;
  std::optional<ScopedTempDir> temp;
  if (config.data.empty()) {
    absl::StatusOr<ScopedTempDir> dir = ScopedTempDir::Create(config.work_dir);
    if (!dir.ok()) return dir.status();
    temp.emplace(std::move(*dir));
    for (const auto& [name, record] : {std::pair{"rec100", 100}, {"rec1k", 1024}, {"rec100k", 100 * 1024}}) {
      ScanFile f;
      f.name = name;
      f.path = absl::StrCat(temp->path(), "/", name, ".tfrecord");
      f.record_bytes = static_cast<double>(record);
      ReportProgress(config, absl::StrCat("scan: writing ", f.path, " (", mib, " MiB)"));
      if (absl::Status s =
              WriteRecords(f.path, static_cast<size_t>(record), static_cast<uint64_t>(mib) << 20);
          !s.ok()) {
        return s;
      }
      files.push_back(std::move(f));
    }
    result.parameters.emplace_back("size", absl::StrCat(mib, " MiB per file (generated)"));
  } else {
    for (const std::string& path : config.data) {
      ScanFile f;
      f.name = std::filesystem::path(path).filename().string();
      f.path = path;
      files.push_back(std::move(f));
    }
    result.parameters.emplace_back("data", absl::StrCat(config.data.size(), " file(s) given"));
  }
  for (ScanFile& f : files) {
    std::error_code ec;
    f.bytes = std::filesystem::file_size(f.path, ec);
    if (ec) return absl::NotFoundError(absl::StrCat(f.path, ": ", ec.message()));
  }
  result.parameters.emplace_back("repeat", absl::StrCat(config.repeat));

  absl::StatusOr<std::unique_ptr<Reactor>> reactor = Reactor::Create();
  if (!reactor.ok()) return reactor.status();
  for (const ScanFile& f : files) {
    ReportProgress(config, absl::StrCat("scan: reading ", f.path, " into the page cache"));
    if (absl::Status s = Warm(f.path); !s.ok()) return s;
    CaseResult c;
    c.name = absl::StrCat(f.name, " page cache");
    c.metric = "GB/s";
    c.x_label = "record bytes";
    c.x = f.record_bytes;
    absl::Status s = RunAlternating(config,
                                    {{"sluice", [&] { return SluiceScan(**reactor, f, false); }},
                                     {"fio", [&] { return FioScan(*fio, f, false); }},
                                     {"dd", [&] { return DdScan(*dd, f); }}},
                                    &c);
    if (!s.ok()) return s;
    result.cases.push_back(std::move(c));
  }

  // The 100 KiB-record file when generated; the last --data file otherwise.
  const ScanFile& direct_file = files.back();
  if (std::string why = DirectUnsupported(direct_file.path); !why.empty()) {
    result.notes.push_back(absl::StrCat("O_DIRECT not measured: the filesystem refuses it (", why, ")"));
  } else {
    CaseResult c;
    c.name = absl::StrCat(direct_file.name, " O_DIRECT");
    c.metric = "GB/s";
    absl::Status s = RunAlternating(config,
                                    {{"sluice", [&] { return SluiceScan(**reactor, direct_file, true); }},
                                     {"fio", [&] { return FioScan(*fio, direct_file, true); }}},
                                    &c);
    if (!s.ok()) return s;
    c.note = "reads the device, not the page cache: both sides bypass it";
    result.cases.push_back(std::move(c));
  }
  return result;
}

}  // namespace

Scenario ScanScenario() {
  Scenario s;
  s.name = "scan";
  s.description = "TFRecord scan (CRCs verified) vs fio io_uring and dd, page cache and O_DIRECT";
  s.size_unit = "MiB per file";
  s.default_size = kDefaultMiB;
  s.run = RunScan;
  return s;
}

}  // namespace sluice::tools
