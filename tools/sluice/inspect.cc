#include "tools/sluice/inspect.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/absl_string_view.h"
#include "io/tfrecord_format.h"
#include "nlohmann/json.hpp"
#include "tools/sluice/record_display.h"
#include "tools/sluice/record_source.h"

namespace sluice::tools {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written: "file" first

std::string CompressionLabel(Compression compression) {
  const absl::string_view name = CompressionName(compression);
  return name.empty() ? "NONE" : std::string(name);
}

Json FeaturesJson(const Features& features) {
  Json out = Json::object();
  for (const auto& [name, feature] : features) {
    out[name] = {{"kind", std::string(FeatureKindName(feature.kind))}, {"values", feature.size()}};
  }
  return out;
}

const char* RecordType(RecordKind kind) {
  switch (kind) {
    case RecordKind::kExample:
      return "tf.train.Example";
    case RecordKind::kSequenceExample:
      return "tf.train.SequenceExample";
    case RecordKind::kNotExample:
      return "unknown";
    case RecordKind::kTooLarge:
      return "too_large";
  }
  return "?";
}

Json RecordJson(const RecordDisplay& record) {
  Json out = {{"type", RecordType(record.kind)}, {"bytes", record.bytes}};
  switch (record.kind) {
    case RecordKind::kExample:
      out["features"] = FeaturesJson(record.example.features);
      break;
    case RecordKind::kSequenceExample: {
      out["context"] = FeaturesJson(record.sequence.context);
      Json lists = Json::object();
      for (const auto& [name, steps] : record.sequence.feature_lists) {
        size_t values = 0;
        FeatureKind kind = FeatureKind::kNone;
        for (const Feature& step : steps) {
          values += step.size();
          if (kind == FeatureKind::kNone) kind = step.kind;
        }
        lists[name] = {
            {"kind", std::string(FeatureKindName(kind))}, {"steps", steps.size()}, {"values", values}};
      }
      out["feature_lists"] = std::move(lists);
      break;
    }
    case RecordKind::kNotExample:
    case RecordKind::kTooLarge:
      out["reason"] = record.why;
      break;
  }
  return out;
}

// Why a file failed: the summary names causes, so that a truncated or unreadable file is not reported
// as a CRC failure.
enum class Cause { kCrc, kTruncated, kCorrupt, kUnreadable, kOutOfMemory };
constexpr int kNumCauses = 5;

Cause CauseOf(const absl::Status& error) {
  if (error.code() == absl::StatusCode::kResourceExhausted) return Cause::kOutOfMemory;
  if (error.code() != absl::StatusCode::kDataLoss) return Cause::kUnreadable;  // open, read, permission, ...
  // The readers' DataLoss messages (io/tfrecord_format.cc, io/sequential_reader.cc) say which it is.
  const absl::string_view message = error.message();
  if (absl::StrContains(message, "CRC mismatch")) return Cause::kCrc;
  if (absl::StrContains(message, "truncated") || absl::StrContains(message, "shrank")) return Cause::kTruncated;
  return Cause::kCorrupt;  // a corrupt compressed stream, a length over the limit, trailing garbage
}

// The JSON key, and the words of the text summary.
const char* CauseKey(Cause cause) {
  switch (cause) {
    case Cause::kCrc:
      return "crc";
    case Cause::kTruncated:
      return "truncated";
    case Cause::kCorrupt:
      return "corrupt";
    case Cause::kUnreadable:
      return "unreadable";
    case Cause::kOutOfMemory:
      return "out_of_memory";
  }
  return "?";
}
const char* CauseWords(Cause cause) {
  switch (cause) {
    case Cause::kCrc:
      return "bad CRC";
    case Cause::kTruncated:
      return "truncated";
    case Cause::kCorrupt:
      return "corrupt data";
    case Cause::kUnreadable:
      return "unreadable";
    case Cause::kOutOfMemory:
      return "out of memory";
  }
  return "?";
}

struct ErrorCounts {
  uint64_t by_cause[kNumCauses] = {};
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : by_cause) n += c;
    return n;
  }
  uint64_t of(Cause cause) const { return by_cause[static_cast<int>(cause)]; }
  Json ToJson() const {
    Json out = Json::object();
    for (int i = 0; i < kNumCauses; ++i) out[CauseKey(static_cast<Cause>(i))] = by_cause[i];
    return out;
  }
};

// "ok": no CRC failed; "bad": some did; "unchecked": no record could be read because of another error.
const char* CrcVerdict(const ErrorCounts& errors, uint64_t records) {
  if (errors.of(Cause::kCrc) > 0) return "bad";
  if (records == 0 && errors.total() > 0) return "unchecked";
  return "ok";
}

// Everything one file's report needs, gathered while its records stream past: counts, the first record
// and at most max_errors_shown errors (printed, not kept), so memory does not grow with the file.
class FileInspector final : public RecordVisitor {
 public:
  FileInspector(const InspectOptions& options, std::ostream& out) : options_(options), out_(out) {}

  bool OnRecord(std::string_view data, uint64_t offset) override {
    const uint64_t index = records_++;
    record_bytes_ += data.size();
    next_offset_ = offset + data.size() + io::kTFRecordHeaderBytes + io::kTFRecordFooterBytes;
    if (options_.all && IsExampleRecord(data, options_.budget)) ++examples_;
    switch (options_.format) {
      case InspectFormat::kText:
        if (index == 0) {
          const RecordDisplay shown = DecodeForDisplay(data, options_.budget, "record 0");
          out_ << "  first record: " << RecordHeadline(shown) << "\n";
          PrintRecordBody(shown, ShowLimits::Summary(), "    ", out_);
        }
        return true;
      case InspectFormat::kJson:
        if (index == 0) first_record_ = RecordJson(DecodeForDisplay(data, options_.budget, "record 0"));
        return true;
      case InspectFormat::kDump:
        if (options_.records.Contains(index)) {
          const RecordDisplay shown = DecodeForDisplay(data, options_.budget, absl::StrCat("record ", index));
          out_ << "  record " << index << "  offset " << offset << "  length " << data.size() << "\n";
          out_ << "    " << RecordHeadline(shown) << "\n";
          PrintRecordBody(shown, ShowLimits::Dump(), "      ", out_);
          ++dumped_;
        }
        return !options_.records.end || records_ < *options_.records.end;
    }
    return true;
  }

  bool OnError(const absl::Status& error) override {
    ++counts_.by_cause[static_cast<int>(CauseOf(error))];
    if (errors_++ == 0) {
      first_error_ = {{"offset", next_offset_},
                      {"code", absl::StatusCodeToString(error.code())},
                      {"message", std::string(error.message())}};
    }
    if (options_.format != InspectFormat::kJson && errors_ <= options_.max_errors_shown) {
      out_ << "  error: " << error.ToString() << "\n";
    }
    return true;
  }

  uint64_t records() const { return records_; }
  uint64_t record_bytes() const { return record_bytes_; }
  uint64_t errors() const { return errors_; }
  const ErrorCounts& counts() const { return counts_; }
  uint64_t examples() const { return examples_; }
  uint64_t dumped() const { return dumped_; }
  const Json& first_error() const { return first_error_; }
  const Json& first_record() const { return first_record_; }

 private:
  const InspectOptions& options_;
  std::ostream& out_;
  uint64_t records_ = 0;
  uint64_t record_bytes_ = 0;
  uint64_t errors_ = 0;
  ErrorCounts counts_;
  uint64_t examples_ = 0;
  uint64_t dumped_ = 0;
  // Where the record after the last good one starts: where the first error's record starts.
  uint64_t next_offset_ = 0;
  Json first_error_;   // null until an error
  Json first_record_;  // kJson only
};

// "crc: ok | FAILED (N bad records) | unchecked", then, when anything failed, "errors: N (by cause)".
void PrintSummary(const ErrorCounts& errors, uint64_t records, size_t shown, std::ostream& out) {
  const std::string_view crc = CrcVerdict(errors, records);
  if (crc == "bad") {
    const uint64_t bad = errors.of(Cause::kCrc);
    out << "  crc: FAILED (" << bad << " bad record" << PluralSuffix(bad) << ")\n";
  } else {
    out << "  crc: " << crc << "\n";
  }
  const uint64_t total = errors.total();
  if (total == 0) return;
  out << "  errors: " << total << " (";
  const char* separator = "";
  for (int i = 0; i < kNumCauses; ++i) {
    if (errors.by_cause[i] == 0) continue;
    out << separator << errors.by_cause[i] << " " << CauseWords(static_cast<Cause>(i));
    separator = ", ";
  }
  if (total > shown) out << "; the first " << shown << " are shown above";
  out << ")\n";
}

int InspectFile(const std::string& path, const InspectOptions& options, std::ostream& out) {
  const bool json = options.format == InspectFormat::kJson;
  absl::StatusOr<TFRecordSource> source = TFRecordSource::Open(path, options.compression, options.stdin_fd);
  if (!source.ok()) {
    if (json) {
      const Json line = {{"file", path},
                         {"compression", nullptr},
                         {"compression_detected", nullptr},
                         {"records", 0},
                         {"bytes", nullptr},
                         {"record_bytes", 0},
                         {"crc", "unchecked"},
                         {"bad_records", 0},
                         {"errors", [&] {
                            ErrorCounts counts;
                            ++counts.by_cause[static_cast<int>(CauseOf(source.status()))];
                            return counts.ToJson();
                          }()},
                         {"first_error",
                          {{"offset", nullptr},
                           {"code", absl::StatusCodeToString(source.status().code())},
                           {"message", std::string(source.status().message())}}},
                         {"first_record", nullptr}};
      // Paths and messages may hold bytes that are not UTF-8: replace them rather than throw.
      out << line.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    } else {
      out << path << "\n  error: " << source.status().ToString() << "\n";
    }
    return 1;
  }
  if (!json) {
    out << source->name() << "\n  compression: " << CompressionLabel(source->compression())
        << (source->detected() ? " (detected)" : "") << "\n";
  }
  FileInspector inspector(options, out);
  const uint64_t bytes = source->Scan(inspector);
  const int status = inspector.errors() == 0 ? 0 : 1;
  if (json) {
    Json line = {{"file", path},
                 {"compression", CompressionLabel(source->compression())},
                 {"compression_detected", source->detected()},
                 {"records", inspector.records()},
                 {"bytes", bytes},
                 {"record_bytes", inspector.record_bytes()},
                 {"crc", CrcVerdict(inspector.counts(), inspector.records())},
                 {"bad_records", inspector.errors()},
                 {"errors", inspector.counts().ToJson()},
                 {"first_error", inspector.first_error()},
                 {"first_record", inspector.first_record()}};
    if (options.all) line["examples"] = inspector.examples();
    out << line.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    return status;
  }
  if (options.format == InspectFormat::kDump) {
    out << "  records: " << inspector.records() << " read, " << inspector.dumped() << " shown ("
        << options.records.ToString() << ")\n";
  } else {
    out << "  records: " << inspector.records() << "\n";
    out << "  bytes: " << bytes << " in the " << (source->is_stream() ? "stream" : "file") << ", "
        << inspector.record_bytes() << " of record data\n";
    if (options.all) {
      out << "  decoded: " << inspector.examples() << " of " << inspector.records()
          << " records are tf.train.Example or SequenceExample\n";
    }
  }
  PrintSummary(inspector.counts(), inspector.records(), options.max_errors_shown, out);
  return status;
}

}  // namespace

std::string RecordRange::ToString() const { return absl::StrCat(begin, ":", end ? absl::StrCat(*end) : ""); }

absl::StatusOr<RecordRange> ParseRecordRange(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad record range \"", AbslView(text), "\": ", AbslView(why),
                     " (expected A:B, A: or :B, a half-open range of indices)"));
  };
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return bad("no ':'");
  const std::string_view a = text.substr(0, colon);
  const std::string_view b = text.substr(colon + 1);
  const auto is_index = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  RecordRange range;
  if (!a.empty() &&
      (!is_index(a) || !absl::SimpleAtoi(absl::string_view(a.data(), a.size()), &range.begin))) {
    return bad("the start is not a record index");
  }
  if (!b.empty()) {
    uint64_t end = 0;
    if (!is_index(b) || !absl::SimpleAtoi(absl::string_view(b.data(), b.size()), &end)) {
      return bad("the end is not a record index");
    }
    if (end < range.begin) return bad("the end is before the start");
    range.end = end;
  }
  return range;
}

int RunInspect(const InspectOptions& options, std::ostream& out, std::ostream& err) {
  if (options.files.empty()) {
    err << "sluice inspect: no FILE given\n";
    return 2;
  }
  if (std::count(options.files.begin(), options.files.end(), "-") > 1) {
    err << "sluice inspect: \"-\" (stdin) can be read only once\n";
    return 2;
  }
  int status = 0;
  for (const std::string& path : options.files) status = std::max(status, InspectFile(path, options, out));
  out.flush();
  return status;
}

}  // namespace sluice::tools
