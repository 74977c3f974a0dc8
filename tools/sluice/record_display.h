// Showing one TFRecord payload as a tf.train.Example or SequenceExample, within a memory budget.
//
// Contract:
// - DecodeForDisplay(record, budget, name) classifies the record and, when it fits the budget, decodes it:
//     kSequenceExample  it decodes as a SequenceExample with at least one feature list;
//     kExample          else it decodes as an Example (a SequenceExample without feature lists reads as
//                       the Example of its context, as protobuf would);
//     kNotExample       it is neither; `why` holds DecodeExample's error;
//     kTooLarge         it is larger than budget.max_record_bytes, or would decode into more than
//                       budget.max_items features, feature-list steps and values; `why` says which.
//   Decoding allocates in proportion to what it decodes, so a small record of many empty values (two wire
//   bytes each) costs far more than its size; CountExampleItems finds that number first without
//   allocating. Memory used: at most about max_record_bytes plus 40 bytes per item.
// - IsExampleRecord(record, budget): whether the record is an Example or SequenceExample (inspect --all);
//   records over the budget are judged by the allocation-free walk alone.
// - RecordHeadline says what the record is in one line ("tf.train.Example, 3 features", "too large to show
//   (N bytes): ..."); PrintRecordBody writes its features below, one per line. Lists longer than
//   limits.values are cut with "... (N more)", bytes values are C-escaped and cut after
//   limits.bytes_per_value bytes, and at most limits.features features and limits.steps steps per feature
//   list are shown.
// - Pure functions; any thread.
//
//   RecordDisplay shown = DecodeForDisplay(record, DisplayBudget{}, "record 0");
//   std::cout << RecordHeadline(shown) << "\n";
//   PrintRecordBody(shown, ShowLimits::Summary(), "  ", std::cout);
#ifndef SLUICE_TOOLS_SLUICE_RECORD_DISPLAY_H_
#define SLUICE_TOOLS_SLUICE_RECORD_DISPLAY_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "sluice/io/example.h"

namespace sluice::tools {

struct DisplayBudget {
  // Bigger records are not decoded for display (the reader already holds one copy of the record).
  size_t max_record_bytes = size_t{16} << 20;
  // Features + feature-list steps + values decoded at most (each costs one std::string or list slot).
  uint64_t max_items = uint64_t{1} << 18;
};

// What an allocation-free walk of the wire format found: an upper bound of the items DecodeExample and
// DecodeSequenceExample would decode (counted up to the first malformed byte, where they stop too).
struct ExampleItemCount {
  uint64_t items = 0;
  bool malformed = false;          // the Example framing (field 1, Features) is broken
  bool has_feature_lists = false;  // a well-formed SequenceExample field 2 with at least one list
};
ExampleItemCount CountExampleItems(std::string_view record);

enum class RecordKind { kExample, kSequenceExample, kNotExample, kTooLarge };

struct RecordDisplay {
  RecordKind kind = RecordKind::kNotExample;
  size_t bytes = 0;                 // the record's size
  DecodedExample example;           // kExample
  DecodedSequenceExample sequence;  // kSequenceExample
  std::string why;                  // kNotExample, kTooLarge
};

// `record_name` names the record in decoding errors ("record 7").
// "s" unless n is 1: "1 feature", "2 features".
inline absl::string_view PluralSuffix(uint64_t n) { return n == 1 ? "" : "s"; }

RecordDisplay DecodeForDisplay(std::string_view record, const DisplayBudget& budget,
                               std::string_view record_name = "");

bool IsExampleRecord(std::string_view record, const DisplayBudget& budget);

struct ShowLimits {
  size_t values = 4;            // per feature (or per step)
  size_t bytes_per_value = 32;  // of each bytes value
  size_t features = 64;         // per Example / context
  size_t steps = 0;             // per feature list; 0 prints only the list's totals

  static ShowLimits Summary() { return {}; }
  static ShowLimits Dump() { return {16, 32, 1024, 8}; }
};

// "[1, 2, 3, ... (7 more)]"; bytes as "\"escaped\"" or "\"escaped prefix\"... (N bytes)".
std::string FormatValues(const Feature& feature, const ShowLimits& limits);

std::string RecordHeadline(const RecordDisplay& record);
// One line per feature (and per feature list and shown step), each starting with `indent`.
void PrintRecordBody(const RecordDisplay& record, const ShowLimits& limits, std::string_view indent,
                     std::ostream& out);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_RECORD_DISPLAY_H_
