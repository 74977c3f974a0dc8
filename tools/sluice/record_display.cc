#include "tools/sluice/record_display.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "engine/absl_string_view.h"
#include "io/example_fields.h"
#include "io/proto_wire.h"

namespace sluice::tools {
namespace {

using namespace example_fields;  // NOLINT(build/namespaces): the proto field numbers
// Features.feature and FeatureLists.feature_list share the number.
constexpr uint32_t kMapEntry = kFeaturesFeature;

// The walks below count what the decoders would allocate: one item per map entry, step and value. They
// return false at the first framing error, having counted everything before it, because the decoders
// stop there too. Counts are upper bounds (repeated map values are all counted; the decoders keep one).

bool CountList(std::string_view body, uint32_t list_field, uint64_t* items) {
  wire::Reader r(body);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return false;
    if (field == kListValue && type == wire::kLengthDelimited) {
      std::string_view value;
      if (!r.ReadBytes(&value)) return false;
      if (list_field == kFeatureBytesList) {
        ++*items;
      } else if (list_field == kFeatureInt64List) {
        // Every packed varint ends in exactly one byte below 0x80.
        for (char c : value) *items += static_cast<uint8_t>(c) < 0x80;
      } else {
        *items += value.size() / 4;
      }
      continue;
    }
    if (field == kListValue && (type == wire::kVarint || type == wire::kFixed32)) ++*items;
    if (!r.Skip(type)) return false;
  }
  return true;
}

bool CountFeature(std::string_view feature, uint64_t* items) {
  wire::Reader r(feature);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return false;
    if (field >= kFeatureBytesList && field <= kFeatureInt64List && type == wire::kLengthDelimited) {
      std::string_view body;
      if (!r.ReadBytes(&body) || !CountList(body, field, items)) return false;
    } else if (!r.Skip(type)) {
      return false;
    }
  }
  return true;
}

bool CountFeatureList(std::string_view list, uint64_t* items) {
  wire::Reader r(list);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return false;
    if (field == kFeatureListFeature && type == wire::kLengthDelimited) {
      std::string_view step;
      if (!r.ReadBytes(&step)) return false;
      ++*items;
      if (!CountFeature(step, items)) return false;
    } else if (!r.Skip(type)) {
      return false;
    }
  }
  return true;
}

// Features (is_lists false) or FeatureLists (true): a map of name -> Feature / FeatureList.
bool CountMap(std::string_view map, bool is_lists, uint64_t* items, uint64_t* entries) {
  wire::Reader r(map);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return false;
    if (field != kMapEntry || type != wire::kLengthDelimited) {
      if (!r.Skip(type)) return false;
      continue;
    }
    std::string_view entry;
    if (!r.ReadBytes(&entry)) return false;
    ++*items;
    ++*entries;
    wire::Reader e(entry);
    while (!e.done()) {
      uint32_t f, t;
      if (!e.ReadTag(&f, &t)) return false;
      if (f == kMapValue && t == wire::kLengthDelimited) {
        std::string_view value;
        if (!e.ReadBytes(&value)) return false;
        if (!(is_lists ? CountFeatureList(value, items) : CountFeature(value, items))) return false;
      } else if (!e.Skip(t)) {
        return false;
      }
    }
  }
  return true;
}

// Feature names are usually plain ASCII; anything else is shown escaped and quoted.
std::string ShowName(std::string_view name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) return std::string(name);
  return absl::StrCat("\"", absl::CHexEscape(AbslView(name)), "\"");
}

std::string ShowBytes(const std::string& value, size_t max_bytes) {
  const absl::string_view head(value.data(), std::min(value.size(), max_bytes));
  std::string out = absl::StrCat("\"", absl::CHexEscape(head), "\"");
  if (head.size() < value.size()) absl::StrAppend(&out, "... (", value.size(), " bytes)");
  return out;
}

void PrintFeatureLine(std::string_view label, const Feature& feature, const ShowLimits& limits,
                      std::string_view indent, std::ostream& out) {
  out << indent << label << FeatureKindName(feature.kind) << ", " << feature.size() << " value"
      << PluralSuffix(feature.size()) << " " << FormatValues(feature, limits) << "\n";
}

void PrintFeatures(const Features& features, const ShowLimits& limits, std::string_view label_prefix,
                   std::string_view indent, std::ostream& out) {
  size_t shown = 0;
  for (const auto& [name, feature] : features) {
    if (shown++ == limits.features) break;
    PrintFeatureLine(absl::StrCat(AbslView(label_prefix), ShowName(name), ": "), feature, limits, indent,
                     out);
  }
  if (features.size() > limits.features) {
    out << indent << "... (" << features.size() - limits.features << " more features)\n";
  }
}

}  // namespace

ExampleItemCount CountExampleItems(std::string_view record) {
  ExampleItemCount count;
  bool lists_broken = false;
  wire::Reader r(record);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) {
      count.malformed = true;
      break;
    }
    if (type == wire::kLengthDelimited && (field == kExampleFeatures || field == kSequenceFeatureLists)) {
      std::string_view body;
      if (!r.ReadBytes(&body)) {
        count.malformed = true;
        break;
      }
      uint64_t entries = 0;
      if (field == kExampleFeatures) {
        if (!CountMap(body, /*is_lists=*/false, &count.items, &entries)) {
          count.malformed = true;
          break;
        }
      } else if (!lists_broken) {
        // DecodeExample skips field 2; DecodeSequenceExample stops at its first error. Either way nothing
        // after a broken field 2 is decoded as a list, so stop counting lists but keep counting field 1.
        lists_broken = !CountMap(body, /*is_lists=*/true, &count.items, &entries);
        count.has_feature_lists |= !lists_broken && entries > 0;
      }
    } else if (!r.Skip(type)) {
      count.malformed = true;
      break;
    }
  }
  if (lists_broken) count.has_feature_lists = false;
  return count;
}

RecordDisplay DecodeForDisplay(std::string_view record, const DisplayBudget& budget,
                               std::string_view record_name) {
  RecordDisplay shown;
  shown.bytes = record.size();
  if (record.size() > budget.max_record_bytes) {
    shown.kind = RecordKind::kTooLarge;
    shown.why = absl::StrCat("over the display budget of ", budget.max_record_bytes, " bytes");
    return shown;
  }
  const ExampleItemCount count = CountExampleItems(record);
  if (count.items > budget.max_items) {
    shown.kind = RecordKind::kTooLarge;
    shown.why = absl::StrCat(count.items, " features, steps and values, over the display budget of ",
                             budget.max_items);
    return shown;
  }
  if (count.has_feature_lists) {
    absl::StatusOr<DecodedSequenceExample> sequence = DecodeSequenceExample(record, record_name);
    if (sequence.ok() && !sequence->feature_lists.empty()) {
      shown.kind = RecordKind::kSequenceExample;
      shown.sequence = *std::move(sequence);
      return shown;
    }
  }
  absl::StatusOr<DecodedExample> example = DecodeExample(record, record_name);
  if (example.ok()) {
    shown.kind = RecordKind::kExample;
    shown.example = *std::move(example);
  } else {
    shown.kind = RecordKind::kNotExample;
    shown.why = std::string(example.status().message());
  }
  return shown;
}

bool IsExampleRecord(std::string_view record, const DisplayBudget& budget) {
  const ExampleItemCount count = CountExampleItems(record);
  if (record.size() <= budget.max_record_bytes && count.items <= budget.max_items) {
    return DecodeExample(record).ok() || DecodeSequenceExample(record).ok();
  }
  return !count.malformed;
}

std::string FormatValues(const Feature& feature, const ShowLimits& limits) {
  const size_t total = feature.size();
  const size_t shown = std::min(total, limits.values);
  std::string out = "[";
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    switch (feature.kind) {
      case FeatureKind::kBytes:
        out += ShowBytes(feature.bytes_list[i], limits.bytes_per_value);
        break;
      case FeatureKind::kFloat:
        absl::StrAppend(&out, feature.float_list[i]);
        break;
      case FeatureKind::kInt64:
        absl::StrAppend(&out, feature.int64_list[i]);
        break;
      case FeatureKind::kNone:
        break;
    }
  }
  if (shown < total) absl::StrAppend(&out, shown > 0 ? ", " : "", "... (", total - shown, " more)");
  return out + "]";
}

std::string RecordHeadline(const RecordDisplay& record) {
  switch (record.kind) {
    case RecordKind::kExample:
      return absl::StrCat("tf.train.Example, ", record.example.features.size(), " feature",
                          PluralSuffix(record.example.features.size()));
    case RecordKind::kSequenceExample:
      return absl::StrCat("tf.train.SequenceExample, ", record.sequence.context.size(), " context feature",
                          PluralSuffix(record.sequence.context.size()), ", ",
                          record.sequence.feature_lists.size(), " feature list",
                          PluralSuffix(record.sequence.feature_lists.size()));
    case RecordKind::kNotExample:
      return absl::StrCat("not a tf.train.Example (", record.bytes, " bytes): ", record.why);
    case RecordKind::kTooLarge:
      return absl::StrCat("too large to show (", record.bytes, " bytes): ", record.why);
  }
  return "?";
}

void PrintRecordBody(const RecordDisplay& record, const ShowLimits& limits, std::string_view indent,
                     std::ostream& out) {
  if (record.kind == RecordKind::kExample) {
    PrintFeatures(record.example.features, limits, "", indent, out);
    return;
  }
  if (record.kind != RecordKind::kSequenceExample) return;
  PrintFeatures(record.sequence.context, limits, "context ", indent, out);
  size_t lists_shown = 0;
  for (const auto& [name, steps] : record.sequence.feature_lists) {
    if (lists_shown++ == limits.features) break;
    size_t values = 0;
    for (const Feature& step : steps) values += step.size();
    out << indent << "list " << ShowName(name) << ": " << steps.size() << " step"
        << PluralSuffix(steps.size()) << ", " << values << " value" << PluralSuffix(values) << "\n";
    const size_t steps_shown = std::min(steps.size(), limits.steps);
    for (size_t i = 0; i < steps_shown; ++i) {
      PrintFeatureLine(absl::StrCat("[", i, "] "), steps[i], limits, absl::StrCat(AbslView(indent), "  "),
                       out);
    }
    if (limits.steps > 0 && steps.size() > steps_shown) {
      out << indent << "  ... (" << steps.size() - steps_shown << " more steps)\n";
    }
  }
  if (record.sequence.feature_lists.size() > limits.features) {
    out << indent << "... (" << record.sequence.feature_lists.size() - limits.features << " more lists)\n";
  }
}

}  // namespace sluice::tools
