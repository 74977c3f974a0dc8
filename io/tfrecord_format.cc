#include "io/tfrecord_format.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/crc32c.h"
#include "io/memory_limit.h"

namespace sluice::io {
namespace {

void StoreLE32(uint32_t v, std::byte* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

void StoreLE64(uint64_t v, std::byte* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

uint32_t LoadLE32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint32_t>(p[i]);
  return v;
}

uint64_t LoadLE64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

// Keeps length + footer + header arithmetic from overflowing whatever limit the options ask for.
constexpr uint64_t kHardMaxRecordBytes = std::numeric_limits<size_t>::max() / 2;

}  // namespace

void EncodeTFRecordHeader(uint64_t length, std::byte header[kTFRecordHeaderBytes]) {
  StoreLE64(length, header);
  StoreLE32(MaskCrc(Crc32c(header, 8)), header + 8);
}

void EncodeTFRecordFooter(std::span<const std::byte> data, std::byte footer[kTFRecordFooterBytes]) {
  StoreLE32(MaskCrc(Crc32c(data.data(), data.size())), footer);
}

void AppendTFRecord(std::span<const std::byte> data, std::string* out) {
  std::byte header[kTFRecordHeaderBytes];
  std::byte footer[kTFRecordFooterBytes];
  EncodeTFRecordHeader(data.size(), header);
  EncodeTFRecordFooter(data, footer);
  out->append(reinterpret_cast<const char*>(header), sizeof(header));
  out->append(reinterpret_cast<const char*>(data.data()), data.size());
  out->append(reinterpret_cast<const char*>(footer), sizeof(footer));
}

void AppendTFRecord(absl::string_view data, std::string* out) { AppendTFRecord(AsBytes(data), out); }

TFRecordParserOptions ParserOptionsFor(const TFRecordReaderOptions& options, std::string file_name) {
  TFRecordParserOptions parser;
  parser.verify_crc = options.verify_crc;
  parser.max_record_bytes = options.max_record_bytes;
  parser.skip_corrupt_records = options.skip_corrupt_records;
  parser.file_name = std::move(file_name);
  parser.start_offset = options.start_offset;
  return parser;
}

TFRecordParser::TFRecordParser(TFRecordParserOptions options)
    : options_(std::move(options)), record_start_(options_.start_offset) {
  if (options_.file_name.empty()) options_.file_name = "<TFRecord stream>";
}

void TFRecordParser::Feed(std::span<const std::byte> chunk) {
  if (!chunk_.empty() && sticky_.ok()) {
    sticky_ = absl::FailedPreconditionError(
        absl::StrCat(options_.file_name, ": TFRecordParser::Feed called with ", chunk_.size(),
                     " bytes of the previous chunk not consumed (call Next() until it returns nullopt)"));
  }
  chunk_ = chunk;
}

absl::Status TFRecordParser::Corrupted(uint64_t offset, absl::string_view cause) const {
  return absl::DataLossError(
      absl::StrCat(options_.file_name, ": corrupted record at offset ", offset, ": ", cause));
}

absl::Status TFRecordParser::ParseHeader(const std::byte* header) {
  length_ = LoadLE64(header);
  if (options_.verify_crc) {
    const uint32_t stored = LoadLE32(header + 8);
    const uint32_t computed = Crc32c(header, 8);
    if (UnmaskCrc(stored) != computed) {
      return Corrupted(record_start_,
                       absl::StrFormat("length CRC mismatch (stored masked CRC 0x%08x, computed 0x%08x); "
                                       "the rest of the file is unreadable",
                                       stored, MaskCrc(computed)));
    }
  }
  const uint64_t limit = std::min(options_.max_record_bytes, kHardMaxRecordBytes);
  if (length_ > limit) {
    return Corrupted(record_start_, absl::StrCat("record length ", length_, " exceeds the limit of ", limit,
                                                 " bytes (max_record_bytes); the rest of the file is unreadable"));
  }
  // Past the limit a caller raised, a length no allocation can hold is refused before asking for memory.
  if (const uint64_t ceiling = AllocationCeiling(); length_ + kTFRecordFooterBytes > ceiling) {
    return OutOfMemory(options_.file_name, record_start_, "record", length_,
                       absl::StrCat("more than this process can ever allocate: ", ceiling,
                                    " bytes, RAM + swap or its rlimit; the rest of the file is not read"));
  }
  return absl::OkStatus();
}

absl::Status TFRecordParser::AppendToBuffer(const std::byte* data, size_t n, size_t total) {
  if (n == 0) return absl::OkStatus();
  const size_t needed = buffer_fill_ + n;
  if (needed > buffer_capacity_) {
    // Grow with the data actually received, never straight to the stated length: a bogus length below
    // the limit costs no more memory than the bytes that really follow it.
    const size_t capacity = std::min(total, std::max({needed, 2 * buffer_capacity_, size_t{4096}}));
    std::unique_ptr<std::byte[]> bigger = TryAllocateBytes(capacity);
    if (bigger == nullptr) {
      return OutOfMemory(options_.file_name, record_start_, "record", length_,
                         absl::StrCat("allocating ", capacity, " bytes to assemble it failed with ", buffer_fill_,
                                      " held; the rest of the file is not read"));
    }
    if (buffer_fill_ != 0) std::memcpy(bigger.get(), buffer_.get(), buffer_fill_);
    buffer_ = std::move(bigger);
    buffer_capacity_ = capacity;
  }
  std::memcpy(buffer_.get() + buffer_fill_, data, n);
  buffer_fill_ = needed;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TFRecordView>> TFRecordParser::Next() {
  if (!sticky_.ok()) return sticky_;
  for (;;) {
    if (state_ == State::kHeader) {
      const std::byte* header;
      if (header_fill_ == 0 && chunk_.size() >= kTFRecordHeaderBytes) {
        header = chunk_.data();
        chunk_ = chunk_.subspan(kTFRecordHeaderBytes);
      } else {
        const size_t n = std::min(kTFRecordHeaderBytes - header_fill_, chunk_.size());
        if (n != 0) std::memcpy(header_ + header_fill_, chunk_.data(), n);
        header_fill_ += n;
        chunk_ = chunk_.subspan(n);
        if (header_fill_ < kTFRecordHeaderBytes) return std::nullopt;
        header = header_;
      }
      header_fill_ = 0;
      if (absl::Status s = ParseHeader(header); !s.ok()) {
        sticky_ = std::move(s);
        return sticky_;
      }
      state_ = State::kBody;
      buffer_fill_ = 0;
    }

    const size_t need = static_cast<size_t>(length_) + kTFRecordFooterBytes;
    const std::byte* body;
    if (buffer_fill_ == 0 && chunk_.size() >= need) {
      body = chunk_.data();
      chunk_ = chunk_.subspan(need);
    } else {
      const size_t n = std::min(need - buffer_fill_, chunk_.size());
      if (absl::Status s = AppendToBuffer(chunk_.data(), n, need); !s.ok()) {
        sticky_ = std::move(s);
        return sticky_;
      }
      chunk_ = chunk_.subspan(n);
      if (buffer_fill_ < need) return std::nullopt;
      body = buffer_.get();
    }
    buffer_fill_ = 0;
    state_ = State::kHeader;
    const uint64_t offset = record_start_;
    record_start_ += kTFRecordHeaderBytes + need;
    const size_t length = static_cast<size_t>(length_);
    const bool trusted = offset >= trusted_begin_ && record_start_ <= trusted_end_;
    if (options_.verify_crc && !trusted) {
      const uint32_t stored = LoadLE32(body + length);
      const uint32_t computed = Crc32c(body, length);
      if (UnmaskCrc(stored) != computed) {
        if (options_.skip_corrupt_records) {
          ++skipped_records_;
          continue;
        }
        return Corrupted(offset, absl::StrFormat("data CRC mismatch (stored masked CRC 0x%08x, computed "
                                                 "0x%08x, record length %d)",
                                                 stored, MaskCrc(computed), length_));
      }
    }
    ++records_returned_;
    return TFRecordView{std::span<const std::byte>(body, length), offset};
  }
}

std::optional<uint64_t> TFRecordParser::NextUnstartedRecord() const {
  if (!sticky_.ok() || !chunk_.empty()) return std::nullopt;
  if (state_ == State::kBody) return record_start_ + kTFRecordHeaderBytes + length_ + kTFRecordFooterBytes;
  if (header_fill_ != 0) return std::nullopt;
  return record_start_;
}

std::vector<FramedRecord> WalkTFRecords(std::span<const std::byte> bytes, uint64_t bytes_offset, uint64_t first,
                                        uint64_t max_record_bytes, size_t max_records) {
  std::vector<FramedRecord> records;
  if (first < bytes_offset) return records;
  const uint64_t limit = std::min(max_record_bytes, kHardMaxRecordBytes);
  uint64_t pos = first - bytes_offset;
  while (records.size() < max_records && pos <= bytes.size() && bytes.size() - pos >= kTFRecordHeaderBytes) {
    const std::byte* header = bytes.data() + pos;
    const uint64_t length = LoadLE64(header);
    if (UnmaskCrc(LoadLE32(header + 8)) != Crc32c(header, 8) || length > limit) break;
    const uint64_t end = pos + kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
    if (end > bytes.size()) break;
    const std::byte* data = header + kTFRecordHeaderBytes;
    records.push_back({bytes_offset + pos, data, length, LoadLE32(data + length)});
    pos = end;
  }
  return records;
}

uint64_t VerifyDataCrcs(std::span<const FramedRecord> records) {
  for (const FramedRecord& r : records) {
    if (UnmaskCrc(r.stored_crc) != Crc32c(r.data, static_cast<size_t>(r.length))) return r.offset;
  }
  if (records.empty()) return 0;
  const FramedRecord& last = records.back();
  return last.offset + kTFRecordHeaderBytes + last.length + kTFRecordFooterBytes;
}

absl::Status TFRecordParser::Finish() {
  if (!sticky_.ok()) return sticky_;
  if (!chunk_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        options_.file_name, ": TFRecordParser::Finish called with ", chunk_.size(), " bytes not consumed"));
  }
  if (state_ == State::kHeader && header_fill_ == 0) return absl::OkStatus();
  uint64_t expected, have;
  if (state_ == State::kHeader) {
    expected = kTFRecordHeaderBytes;
    have = header_fill_;
  } else {
    expected = kTFRecordHeaderBytes + length_ + kTFRecordFooterBytes;
    have = kTFRecordHeaderBytes + buffer_fill_;
  }
  sticky_ = absl::DataLossError(absl::StrCat(options_.file_name, ": truncated record at offset ", record_start_,
                                             ": expected ", expected, state_ == State::kHeader ? " header" : "",
                                             " bytes, file ends after ", have));
  return sticky_;
}

TFRecordDecoder::TFRecordDecoder(Compression compression, TFRecordParserOptions options)
    : compression_(compression) {
  if (compression_ != Compression::kNone) {
    std::string name = options.file_name.empty() ? std::string("<TFRecord stream>") : options.file_name;
    inflater_.emplace(compression_ == Compression::kGzip ? ZlibFormat::kGzip : ZlibFormat::kZlib, name);
    options.file_name = absl::StrCat(name, " (decompressed)");
    skip_ = options.start_offset;
  }
  parser_ = TFRecordParser(std::move(options));
}

void TFRecordDecoder::Feed(std::span<const std::byte> chunk) {
  if (inflater_) {
    inflater_->Feed(chunk);
  } else {
    parser_.Feed(chunk);
  }
}

absl::StatusOr<std::optional<TFRecordView>> TFRecordDecoder::Next() {
  if (!inflater_) return parser_.Next();
  for (;;) {
    absl::StatusOr<std::optional<TFRecordView>> record = parser_.Next();
    if (!record.ok() || record->has_value()) return record;
    absl::StatusOr<std::span<const std::byte>> out = inflater_->Next();
    if (!out.ok()) {
      inflate_failed_ = true;
      return out.status();
    }
    if (out->empty()) return std::nullopt;
    std::span<const std::byte> piece = *out;
    if (skip_ != 0) {
      const size_t dropped = static_cast<size_t>(std::min<uint64_t>(skip_, piece.size()));
      skip_ -= dropped;
      piece = piece.subspan(dropped);
      if (piece.empty()) continue;
    }
    parser_.Feed(piece);
  }
}

absl::Status TFRecordDecoder::SkipCompressed() {
  while (skipped_after_failure_ < kMaxSkippedBytes) {
    absl::StatusOr<std::span<const std::byte>> out = inflater_->Next();
    if (!out.ok()) {
      inflate_failed_ = true;
      return out.status();
    }
    if (out->empty()) break;
    skipped_after_failure_ += out->size();
  }
  return absl::OkStatus();
}

absl::Status TFRecordDecoder::FinishCompressed() {
  if (skipped_after_failure_ >= kMaxSkippedBytes) return absl::OkStatus();  // gave up: input not all consumed
  absl::Status s = inflater_->Finish();
  if (!s.ok()) inflate_failed_ = true;
  return s;
}

absl::Status TFRecordDecoder::Finish() {
  if (inflater_) {
    if (absl::Status s = inflater_->Finish(); !s.ok()) {
      inflate_failed_ = true;
      return s;
    }
    if (skip_ != 0) {
      const TFRecordParserOptions& options = parser_.options();
      return absl::OutOfRangeError(absl::StrCat(options.file_name, ": start offset ", options.start_offset,
                                                " is past the end of the data (",
                                                options.start_offset - skip_, " bytes)"));
    }
  }
  return parser_.Finish();
}

}  // namespace sluice::io
