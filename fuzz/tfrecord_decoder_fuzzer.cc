// libFuzzer target for io::TFRecordDecoder (framing, CRCs, GZIP/ZLIB streaming).
//
// Input layout: byte 0 selects the compression (value mod 3: NONE, GZIP, ZLIB), byte 1 the chunking
// pattern (0: the whole file in one Feed, else varying chunk sizes derived from it), the rest is the file.
//
// Every input runs three decoder configurations (CRC checked, CRC ignored so that bytes past a bad CRC
// still reach the record parser, CRC checked with skip_corrupt_records), each fed chunk by chunk from
// short-lived heap copies so that ASan sees any view that outlives its chunk. The result is checked
// against a reference: the same file inflated in one go (with a different output chunk size) and parsed
// from one buffer. Streaming must not change what is read, so with a readable reference the two event
// sequences (records and errors) must be identical; every record must also be the bytes of the
// decompressed stream at its offset. A violated invariant is __builtin_trap(), which libFuzzer reports as
// a crash.
//
// Resource bounds: max_record_bytes is 1 MiB, the reference keeps at most kMaxReferenceBytes of
// decompressed data, and a run stops after kMaxEvents events or kMaxStreamBytes of records (a deflate
// bomb of zero-length records would otherwise run for minutes).
//
// Build: see fuzz/README.md (clang -fsanitize=fuzzer,address,undefined; scripts/fuzz builds and runs it).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/crc32c.h"
#include "io/tfrecord_format.h"
#include "io/zlib_stream.h"
#include "sluice/io/tfrecord.h"

namespace {

using sluice::Compression;
using sluice::io::InflateLibrary;
using sluice::io::Inflater;
using sluice::io::IsalInflateAvailable;
using sluice::io::TFRecordDecoder;
using sluice::io::TFRecordParser;
using sluice::io::TFRecordParserOptions;
using sluice::io::TFRecordView;
using sluice::io::ZlibFormat;

constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 20;
constexpr size_t kMaxReferenceBytes = size_t{8} << 20;
constexpr size_t kMaxEvents = 200000;
constexpr uint64_t kMaxStreamBytes = uint64_t{64} << 20;
constexpr char kFileName[] = "fuzz.tfrecord";

#define FUZZ_CHECK(cond)       \
  do {                         \
    if (!(cond)) __builtin_trap(); \
  } while (0)

uint64_t LoadLE64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

uint32_t LoadLE32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint32_t>(p[i]);
  return v;
}

// One thing a reader observed: a record (offset + bytes) or an error.
struct Event {
  bool is_record = false;
  uint64_t offset = 0;
  std::string data;
  absl::Status status;

  friend bool operator==(const Event& a, const Event& b) {
    return a.is_record == b.is_record && a.offset == b.offset && a.data == b.data && a.status == b.status;
  }
};

struct Run {
  std::vector<Event> events;
  absl::Status finish;        // Finish() after the last chunk (only if the run was not cut short)
  bool sticky = false;        // stopped on an error that repeated
  bool truncated = false;     // stopped by kMaxEvents / kMaxStreamBytes: compare nothing
  uint64_t stream_bytes = 0;  // framing + data of the records returned
  uint64_t skipped = 0;       // parser().skipped_records() at the end
};

// Drains a parser or decoder until it wants more input. Returns false when the run must stop.
template <class Reader>
bool Drain(Reader& reader, Run& run) {
  for (;;) {
    if (run.events.size() >= kMaxEvents || run.stream_bytes > kMaxStreamBytes) {
      run.truncated = true;
      return false;
    }
    absl::StatusOr<std::optional<TFRecordView>> next = reader.Next();
    if (!next.ok()) {
      // A sticky error comes back unchanged from every later call; a data CRC error names its own record
      // and reading continues with the next one.
      if (!run.events.empty() && !run.events.back().is_record && run.events.back().status == next.status()) {
        run.sticky = true;
        return false;
      }
      Event e;
      e.status = next.status();
      FUZZ_CHECK(!e.status.ok());
      run.events.push_back(std::move(e));
      continue;
    }
    if (!next->has_value()) return true;
    const TFRecordView& view = **next;
    FUZZ_CHECK(view.data.size() <= kMaxRecordBytes);
    Event e;
    e.is_record = true;
    e.offset = view.offset;
    e.data.assign(view.str().data(), view.str().size());  // reads every byte: ASan checks the view
    run.stream_bytes += e.data.size() + 16;
    run.events.push_back(std::move(e));
  }
}

size_t ChunkSize(uint8_t pattern, size_t index, size_t file_size) {
  if (pattern == 0) return file_size;
  // Small patterns give tiny chunks (headers and footers split everywhere), large ones up to 8 KiB. A
  // large file gets at most ~4096 chunks: one copy per chunk under ASan would dominate the run time, and
  // small files already exercise every split.
  const size_t span = pattern < 128 ? pattern : static_cast<size_t>(pattern - 127) * 64;
  return 1 + file_size / 4096 + (pattern + index * (pattern | 1u) * 13u) % span;
}

Run RunDecoder(Compression compression, const TFRecordParserOptions& options, uint8_t pattern,
               std::span<const std::byte> file) {
  TFRecordDecoder decoder(compression, options);
  Run run;
  size_t pos = 0;
  for (size_t index = 0; pos < file.size(); ++index) {
    const size_t n = std::min(ChunkSize(pattern, index, file.size()), file.size() - pos);
    // A private copy freed right after the drain: a view or pointer kept past it is a use after free.
    auto chunk = std::make_unique<std::byte[]>(n);
    std::memcpy(chunk.get(), file.data() + pos, n);
    pos += n;
    decoder.Feed(std::span<const std::byte>(chunk.get(), n));
    if (!Drain(decoder, run)) break;
  }
  if (!run.truncated) run.finish = decoder.Finish();
  run.skipped = decoder.parser().skipped_records();
  size_t records = 0;
  for (const Event& e : run.events) records += e.is_record ? 1 : 0;
  FUZZ_CHECK(decoder.parser().records_returned() == records);
  if (run.sticky) FUZZ_CHECK(!run.finish.ok());
  return run;
}

// The decompressed stream as one buffer; ok=false when inflating failed (stream holds what came out
// before the error) or the stream was longer than kMaxReferenceBytes (capped=true).
struct Reference {
  std::string stream;
  bool ok = true;
  bool capped = false;
};

Reference Inflate(Compression compression, std::span<const std::byte> file,
                  InflateLibrary library = InflateLibrary::kFastest) {
  Reference ref;
  if (compression == Compression::kNone) {
    ref.stream.assign(reinterpret_cast<const char*>(file.data()), file.size());
    return ref;
  }
  Inflater inflater(compression == Compression::kGzip ? ZlibFormat::kGzip : ZlibFormat::kZlib, kFileName,
                    /*output_chunk_bytes=*/4096, library);
  inflater.Feed(file);
  for (;;) {
    absl::StatusOr<std::span<const std::byte>> out = inflater.Next();
    if (!out.ok()) {
      ref.ok = false;
      return ref;
    }
    if (out->empty()) break;
    if (ref.stream.size() + out->size() > kMaxReferenceBytes) {
      ref.ok = false;
      ref.capped = true;
      return ref;
    }
    ref.stream.append(reinterpret_cast<const char*>(out->data()), out->size());
  }
  FUZZ_CHECK(inflater.decompressed_bytes() == ref.stream.size());
  ref.ok = inflater.Finish().ok();
  return ref;
}

// Checks one decoder run against the decompressed stream.
void CheckRun(const Run& run, const TFRecordParserOptions& options, const Reference& ref,
              const TFRecordParserOptions& ref_options) {
  const auto* stream = reinterpret_cast<const std::byte*>(ref.stream.data());
  uint64_t previous_end = 0;
  bool error_seen = false;
  bool error_since_record = false;
  for (const Event& e : run.events) {
    if (!e.is_record) {
      error_seen = true;
      error_since_record = true;
      // Every error is one of the documented kinds.
      FUZZ_CHECK(e.status.code() == absl::StatusCode::kDataLoss);
      continue;
    }
    FUZZ_CHECK(e.offset >= previous_end);
    // Records follow each other back to back unless a bad one was skipped or reported in between.
    if (!options.skip_corrupt_records && !error_since_record) FUZZ_CHECK(e.offset == previous_end);
    error_since_record = false;
    previous_end = e.offset + 16 + e.data.size();
    // The record must be the bytes at its offset in the decompressed stream (when the reference has them).
    if (!ref.capped && previous_end <= ref.stream.size()) {
      FUZZ_CHECK(LoadLE64(stream + e.offset) == e.data.size());
      FUZZ_CHECK(std::memcmp(stream + e.offset + 12, e.data.data(), e.data.size()) == 0);
      if (options.verify_crc) {
        const uint32_t stored = LoadLE32(stream + e.offset + 12 + e.data.size());
        FUZZ_CHECK(sluice::io::UnmaskCrc(stored) == sluice::io::Crc32c(e.data.data(), e.data.size()));
      }
    } else if (ref.ok) {
      __builtin_trap();  // a record past the end of a fully decompressed stream
    }
  }
  if (run.truncated || ref.capped) return;
  if (!ref.ok) {
    // The file is not a valid stream: the decoder must not call it a clean one.
    FUZZ_CHECK(error_seen || !run.finish.ok());
    return;
  }
  // Reference: the whole stream parsed from one buffer. Streaming must give the same events.
  TFRecordParser parser(ref_options);
  Run whole;
  parser.Feed(std::span<const std::byte>(stream, ref.stream.size()));
  if (Drain(parser, whole)) whole.finish = parser.Finish();
  if (whole.truncated) return;
  FUZZ_CHECK(whole.events == run.events);
  FUZZ_CHECK(whole.sticky == run.sticky);
  if (!whole.sticky) FUZZ_CHECK(whole.finish == run.finish);
  FUZZ_CHECK(run.finish.ok() == (!run.sticky && parser.record_start() == ref.stream.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Compression compression = static_cast<Compression>(data[0] % 3);
  const uint8_t pattern = data[1];
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data) + 2, size - 2);

  const Reference ref = Inflate(compression, file);
  if (compression != Compression::kNone && IsalInflateAvailable()) {
    // ISA-L decodes (the default) and zlib agree on every stream both accept.
    const Reference zlib_ref = Inflate(compression, file, InflateLibrary::kZlib);
    if (ref.ok && zlib_ref.ok) FUZZ_CHECK(ref.stream == zlib_ref.stream);
  }
  Run runs[3];
  for (int config = 0; config < 3; ++config) {
    TFRecordParserOptions options;
    options.file_name = kFileName;
    options.max_record_bytes = kMaxRecordBytes;
    options.verify_crc = config != 1;
    options.skip_corrupt_records = config == 2;
    runs[config] = RunDecoder(compression, options, pattern, file);
    TFRecordParserOptions ref_options = options;
    if (compression != Compression::kNone) ref_options.file_name = std::string(kFileName) + " (decompressed)";
    CheckRun(runs[config], options, ref, ref_options);
  }
  // skip_corrupt_records turns exactly the data CRC errors into skipped records and changes nothing else.
  const Run& plain = runs[0];
  const Run& skipping = runs[2];
  if (!plain.truncated && !skipping.truncated) {
    FUZZ_CHECK(plain.skipped == 0);
    std::vector<Event> kept;
    uint64_t crc_errors = 0;
    for (const Event& e : plain.events) {
      if (!e.is_record && e.status.message().find("data CRC mismatch") != absl::string_view::npos) {
        ++crc_errors;
      } else {
        kept.push_back(e);
      }
    }
    FUZZ_CHECK(kept == skipping.events);
    FUZZ_CHECK(crc_errors == skipping.skipped);
    FUZZ_CHECK(plain.finish == skipping.finish);
  }
  return 0;
}
