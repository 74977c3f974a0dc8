// tf.train.Example / SequenceExample parsing with a hand-written wire decoder.
//
// Why not libprotobuf: 1.3-1.6x its parse+extract per record, 2.4-3.9x per batch of 256 (docs/io.md).
// It parses straight from the record bytes into the output tensors (one allocation per output, none per
// feature), only descends into the features a spec asks for, and keeps the library free of protobuf.
//
// Shape of the decoder: a first pass over a record finds, for every spec key, the bytes of its Feature
// (last map entry wins). A Feature is then scanned once to learn its final oneof kind and value count
// (cheap: packed floats are a length, packed varints a count of terminator bytes), checked against the
// spec, and decoded into memory sized from that count.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/absl_string_view.h"
#include "io/example_fields.h"
#include "io/proto_wire.h"
#include "sluice/io/example.h"

namespace sluice {
namespace {

using namespace example_fields;  // NOLINT(build/namespaces): the proto field numbers

std::string_view RecordName(std::string_view name) { return name.empty() ? "<unknown>" : name; }

struct WireError {
  const char* why = nullptr;
  size_t offset = 0;
};

bool Fail(const wire::Reader& r, WireError* error) {
  error->why = r.error();
  error->offset = r.error_offset();
  return false;
}

bool FailAt(const char* why, const char* where, const char* origin, WireError* error) {
  error->why = why;
  error->offset = static_cast<size_t>(where - origin);
  return false;
}

absl::Status Malformed(const WireError& error, std::string_view message, std::string_view record_name,
                       std::string_view key = {}) {
  std::string where;
  if (!key.empty()) where = absl::StrCat(" (feature '", AbslView(key), "')");
  return absl::DataLossError(absl::StrCat("Name: ", AbslView(RecordName(record_name)), ": malformed ",
                                          AbslView(message), where, ": ", error.why, " at byte offset ",
                                          error.offset));
}

FeatureKind KindOfField(uint32_t field) {
  switch (field) {
    case kFeatureBytesList:
      return FeatureKind::kBytes;
    case kFeatureFloatList:
      return FeatureKind::kFloat;
    case kFeatureInt64List:
      return FeatureKind::kInt64;
    default:
      return FeatureKind::kNone;
  }
}

FeatureKind KindOfDType(DType dtype) {
  switch (dtype) {
    case DType::kString:
      return FeatureKind::kBytes;
    case DType::kFloat32:
      return FeatureKind::kFloat;
    case DType::kInt64:
      return FeatureKind::kInt64;
    default:
      return FeatureKind::kNone;
  }
}

// Counts (and validates) the values in one BytesList/FloatList/Int64List message body.
bool CountList(FeatureKind kind, std::string_view body, const char* origin, size_t* count, WireError* error) {
  wire::Reader r(body, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    if (field == kListValue) {
      if (kind == FeatureKind::kBytes && type == wire::kLengthDelimited) {
        std::string_view ignored;
        if (!r.ReadBytes(&ignored)) return Fail(r, error);
        ++*count;
        continue;
      }
      if (kind == FeatureKind::kFloat && type == wire::kLengthDelimited) {
        std::string_view packed;
        if (!r.ReadBytes(&packed)) return Fail(r, error);
        if (packed.size() % 4 != 0) {
          return FailAt("packed float list length is not a multiple of 4", packed.data(), origin, error);
        }
        *count += packed.size() / 4;
        continue;
      }
      if (kind == FeatureKind::kFloat && type == wire::kFixed32) {
        uint32_t ignored;
        if (!r.ReadFixed32(&ignored)) return Fail(r, error);
        ++*count;
        continue;
      }
      if (kind == FeatureKind::kInt64 && type == wire::kLengthDelimited) {
        std::string_view packed;
        if (!r.ReadBytes(&packed)) return Fail(r, error);
        // Each varint ends in exactly one byte below 0x80; overlong varints are caught when decoding.
        size_t n = 0;
        for (char c : packed) n += static_cast<uint8_t>(c) < 0x80;
        if (!packed.empty() && static_cast<uint8_t>(packed.back()) >= 0x80) {
          return FailAt("truncated varint in packed int64 list", packed.data() + packed.size(), origin, error);
        }
        *count += n;
        continue;
      }
      if (kind == FeatureKind::kInt64 && type == wire::kVarint) {
        uint64_t ignored;
        if (!r.ReadVarint(&ignored)) return Fail(r, error);
        ++*count;
        continue;
      }
    }
    // Unknown field, or field 1 with a wire type that does not fit: protobuf keeps it as unknown.
    if (!r.Skip(type)) return Fail(r, error);
  }
  return true;
}

struct FeatureScan {
  FeatureKind kind = FeatureKind::kNone;
  size_t count = 0;
  // Where the lists of the final kind start; earlier lists belong to a kind the oneof later replaced.
  const char* begin = nullptr;
};

bool ScanFeature(std::string_view feature, const char* origin, FeatureScan* scan, WireError* error) {
  *scan = FeatureScan{};
  scan->begin = feature.data();
  wire::Reader r(feature, origin);
  while (!r.done()) {
    const char* tag_start = r.position();
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    const FeatureKind kind = KindOfField(field);
    if (kind != FeatureKind::kNone && type == wire::kLengthDelimited) {
      std::string_view body;
      if (!r.ReadBytes(&body)) return Fail(r, error);
      if (kind != scan->kind) {
        scan->kind = kind;
        scan->count = 0;
        scan->begin = tag_start;
      }
      if (!CountList(kind, body, origin, &scan->count, error)) return false;
      continue;
    }
    if (!r.Skip(type)) return Fail(r, error);
  }
  return true;
}

// Decodes the values of scan.kind into out[0, scan.count). The bytes were validated by ScanFeature except
// for the varints inside packed int64 lists, which are checked here.
template <class T>
bool DecodeFeature(std::string_view feature, const FeatureScan& scan, const char* origin, T* out,
                   WireError* error) {
  const char* end = feature.data() + feature.size();
  wire::Reader r(std::string_view(scan.begin, static_cast<size_t>(end - scan.begin)), origin);
  const uint32_t wanted = scan.kind == FeatureKind::kBytes   ? kFeatureBytesList
                          : scan.kind == FeatureKind::kFloat ? kFeatureFloatList
                                                             : kFeatureInt64List;
  T* p = out;
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    if (field != wanted || type != wire::kLengthDelimited) {
      if (!r.Skip(type)) return Fail(r, error);
      continue;
    }
    std::string_view body;
    if (!r.ReadBytes(&body)) return Fail(r, error);
    wire::Reader list(body, origin);
    while (!list.done()) {
      uint32_t f, t;
      if (!list.ReadTag(&f, &t)) return Fail(list, error);
      if constexpr (std::is_same_v<T, std::string>) {
        if (f == kListValue && t == wire::kLengthDelimited) {
          std::string_view v;
          if (!list.ReadBytes(&v)) return Fail(list, error);
          (p++)->assign(v.data(), v.size());
          continue;
        }
      } else if constexpr (std::is_same_v<T, float>) {
        if (f == kListValue && t == wire::kLengthDelimited) {
          std::string_view packed;
          if (!list.ReadBytes(&packed)) return Fail(list, error);
          if (!packed.empty()) {  // memcpy to a null `p` is UB even for zero bytes
            std::memcpy(p, packed.data(), packed.size());  // little-endian IEEE floats, as on the wire
            p += packed.size() / 4;
          }
          continue;
        }
        if (f == kListValue && t == wire::kFixed32) {
          uint32_t bits;
          if (!list.ReadFixed32(&bits)) return Fail(list, error);
          *p++ = std::bit_cast<float>(bits);
          continue;
        }
      } else {
        if (f == kListValue && t == wire::kLengthDelimited) {
          std::string_view packed;
          if (!list.ReadBytes(&packed)) return Fail(list, error);
          wire::Reader values(packed, origin);
          while (!values.done()) {
            uint64_t v;
            if (!values.ReadVarint(&v)) return Fail(values, error);
            *p++ = static_cast<int64_t>(v);
          }
          continue;
        }
        if (f == kListValue && t == wire::kVarint) {
          uint64_t v;
          if (!list.ReadVarint(&v)) return Fail(list, error);
          *p++ = static_cast<int64_t>(v);
          continue;
        }
      }
      if (!list.Skip(t)) return Fail(list, error);
    }
  }
  if (static_cast<size_t>(p - out) != scan.count) {
    // Only reachable when an overlong varint made the terminator count disagree with the decode.
    return FailAt("packed int64 list holds a malformed varint", scan.begin, origin, error);
  }
  return true;
}

// Decodes one Feature into an owned Feature (full validation).
bool DecodeOwned(std::string_view bytes, const char* origin, Feature* feature, WireError* error) {
  FeatureScan scan;
  if (!ScanFeature(bytes, origin, &scan, error)) return false;
  feature->kind = scan.kind;
  if (scan.count == 0) return true;
  switch (scan.kind) {
    case FeatureKind::kNone:
      return true;
    case FeatureKind::kBytes:
      feature->bytes_list.resize(scan.count);
      return DecodeFeature(bytes, scan, origin, feature->bytes_list.data(), error);
    case FeatureKind::kFloat:
      feature->float_list.resize(scan.count);
      return DecodeFeature(bytes, scan, origin, feature->float_list.data(), error);
    case FeatureKind::kInt64:
      feature->int64_list.resize(scan.count);
      return DecodeFeature(bytes, scan, origin, feature->int64_list.data(), error);
  }
  return true;
}

// Reads a map entry message: key (field 1) and value (field 2); missing ones are empty, repeats keep the
// last. `value` is left pointing at an empty view inside the entry when absent, so a present key with no
// value is distinguishable from an absent key (data() != nullptr).
bool ReadMapEntry(std::string_view entry, const char* origin, std::string_view* key, std::string_view* value,
                  WireError* error) {
  *key = std::string_view(entry.data(), 0);
  *value = std::string_view(entry.data(), 0);
  wire::Reader r(entry, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    if (field == kMapKey && type == wire::kLengthDelimited) {
      if (!r.ReadBytes(key)) return Fail(r, error);
    } else if (field == kMapValue && type == wire::kLengthDelimited) {
      if (!r.ReadBytes(value)) return Fail(r, error);
    } else if (!r.Skip(type)) {
      return Fail(r, error);
    }
  }
  return true;
}

// Calls on_entry(key, value) for every map entry of a Features / FeatureLists message (`map_field` = 1).
template <class OnEntry>
bool ForEachMapEntry(std::string_view message, const char* origin, WireError* error, OnEntry&& on_entry) {
  wire::Reader r(message, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    if (field == kFeaturesFeature && type == wire::kLengthDelimited) {
      std::string_view entry, key, value;
      if (!r.ReadBytes(&entry)) return Fail(r, error);
      if (!ReadMapEntry(entry, origin, &key, &value, error)) return false;
      if (!on_entry(key, value, error)) return false;
    } else if (!r.Skip(type)) {
      return Fail(r, error);
    }
  }
  return true;
}

// Calls on_field(body) for every occurrence of length-delimited `wanted` in `message` (sub-messages that
// protobuf would merge), skipping everything else.
template <class OnField>
bool ForEachField(std::string_view message, const char* origin, uint32_t wanted, WireError* error,
                  OnField&& on_field) {
  wire::Reader r(message, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Fail(r, error);
    if (field == wanted && type == wire::kLengthDelimited) {
      std::string_view body;
      if (!r.ReadBytes(&body)) return Fail(r, error);
      if (!on_field(body, error)) return false;
    } else if (!r.Skip(type)) {
      return Fail(r, error);
    }
  }
  return true;
}

// Spec keys sorted by name for lookup, each with its output index (fixed features first, then var).
class KeyTable {
 public:
  template <class Fixed, class Var>
  KeyTable(const std::vector<Fixed>& fixed, const std::vector<Var>& var) {
    keys_.reserve(fixed.size() + var.size());
    for (const auto& f : fixed) keys_.push_back({f.key, static_cast<int>(keys_.size())});
    for (const auto& v : var) keys_.push_back({v.key, static_cast<int>(keys_.size())});
    std::sort(keys_.begin(), keys_.end());
  }
  size_t size() const { return keys_.size(); }

  absl::Status CheckUnique() const {
    for (size_t i = 1; i < keys_.size(); ++i) {
      if (keys_[i].key == keys_[i - 1].key) {
        return absl::InvalidArgumentError(
            absl::StrCat("Parse spec: feature key '", AbslView(keys_[i].key), "' is used twice"));
      }
    }
    return absl::OkStatus();
  }

  // Tries the entry after the previous hit (`hint`, per record) first: writers emit map entries in a
  // stable order (TFX and Python's protobuf sort them by key), so a record usually costs one comparison
  // per feature; otherwise a binary search.
  int Find(std::string_view key, size_t& hint) const {
    if (hint < keys_.size() && keys_[hint].key == key) return keys_[hint++].index;
    auto it = std::lower_bound(keys_.begin(), keys_.end(), key,
                               [](const Key& k, std::string_view wanted) { return k.key < wanted; });
    if (it == keys_.end() || it->key != key) return -1;
    hint = static_cast<size_t>(it - keys_.begin()) + 1;
    return it->index;
  }

 private:
  struct Key {
    std::string_view key;
    int index;
    friend bool operator<(const Key& a, const Key& b) { return a.key < b.key; }
  };
  std::vector<Key> keys_;
};

// Where each spec key's Feature bytes are in one record; inline for specs of up to 8 keys.
using Slots = absl::InlinedVector<std::string_view, 8>;

// Finds the Feature bytes of every spec key in one Features message. slots[i].data() == nullptr: absent.
bool CollectFeatures(std::string_view features, const char* origin, const KeyTable& keys, Slots& slots,
                     WireError* error) {
  size_t hint = 0;
  return ForEachMapEntry(features, origin, error,
                         [&](std::string_view key, std::string_view value, WireError*) {
                           const int index = keys.Find(key, hint);
                           if (index >= 0) slots[static_cast<size_t>(index)] = value;  // last one wins
                           return true;
                         });
}

absl::Status MissingError(std::string_view record_name, std::string_view key, DType dtype) {
  return absl::InvalidArgumentError(
      absl::StrCat("Name: ", AbslView(RecordName(record_name)), ", Feature: ", AbslView(key),
                   " (data type: ", AbslView(DTypeName(dtype)), ") is required but could not be found."));
}

absl::Status TypeError(std::string_view record_name, std::string_view what, std::string_view key,
                       int64_t index, FeatureKind got, DType expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "Name: ", AbslView(RecordName(record_name)), ", ", AbslView(what), ": ", AbslView(key),
      ", Index: ", index, ". Data types don't match. Data type: ", AbslView(FeatureKindName(got)),
      " but expected type: ", AbslView(DTypeName(expected)), " (",
      AbslView(FeatureKindName(KindOfDType(expected))), ")"));
}

absl::Status CountError(std::string_view record_name, std::string_view what, std::string_view key,
                        int64_t index, DType dtype, size_t got, const Shape& shape) {
  return absl::InvalidArgumentError(
      absl::StrCat("Name: ", AbslView(RecordName(record_name)), ", ", AbslView(what), ": ", AbslView(key),
                   ", Index: ", index, ". Can't parse serialized Example: expected ", shape.num_elements(),
                   " ", AbslView(DTypeName(dtype)), " values (shape ", shape.DebugString(), "), got ", got));
}

// Decodes a scanned feature of the right kind into `dst` (count elements of the dtype).
bool DecodeInto(std::string_view feature, const FeatureScan& scan, const char* origin, DType dtype, void* dst,
                WireError* error) {
  if (scan.count == 0) return true;
  switch (dtype) {
    case DType::kString:
      return DecodeFeature(feature, scan, origin, static_cast<std::string*>(dst), error);
    case DType::kFloat32:
      return DecodeFeature(feature, scan, origin, static_cast<float*>(dst), error);
    case DType::kInt64:
      return DecodeFeature(feature, scan, origin, static_cast<int64_t*>(dst), error);
    default:
      return true;  // unreachable: ValidateParseSpec admits only the three above
  }
}

void CopyElements(const Tensor& src, DType dtype, size_t count, void* dst) {
  if (dtype == DType::kString) {
    const std::string* s = src.data<std::string>();
    auto* d = static_cast<std::string*>(dst);
    for (size_t i = 0; i < count; ++i) d[i] = s[i];
  } else if (count > 0) {
    std::memcpy(dst, src.raw_data(), count * DTypeSize(dtype));
  }
}

// Accumulates var-len values over records (or steps) before they become one tensor.
struct VarAccumulator {
  DType dtype;
  std::vector<std::string> strings;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
  std::vector<int64_t> row_lengths;

  explicit VarAccumulator(DType d) : dtype(d) {}

  size_t size() const {
    return dtype == DType::kString ? strings.size() : dtype == DType::kFloat32 ? floats.size() : int64s.size();
  }
  // Grows by n and returns where the new values go.
  void* Grow(size_t n) {
    switch (dtype) {
      case DType::kString:
        strings.resize(strings.size() + n);
        return strings.data() + strings.size() - n;
      case DType::kFloat32:
        floats.resize(floats.size() + n);
        return floats.data() + floats.size() - n;
      default:
        int64s.resize(int64s.size() + n);
        return int64s.data() + int64s.size() - n;
    }
  }
  VarLenValues Finish() {
    VarLenValues out;
    switch (dtype) {
      case DType::kString: {
        out.values = Tensor::Empty(DType::kString, Shape({static_cast<int64_t>(strings.size())}));
        std::string* d = out.values.data<std::string>();
        for (size_t i = 0; i < strings.size(); ++i) d[i] = std::move(strings[i]);
        break;
      }
      case DType::kFloat32:
        out.values = Tensor::FromVector<float>(floats);
        break;
      default:
        out.values = Tensor::FromVector<int64_t>(int64s);
        break;
    }
    out.row_lengths = Tensor::FromVector<int64_t>(row_lengths);
    return out;
  }
};

// Appends one feature's values (absent: none) as one row.
absl::Status AppendVar(std::string_view feature, const char* origin, const VarLenFeature& spec,
                       std::string_view record_name, std::string_view what, int64_t index,
                       VarAccumulator& acc) {
  if (feature.data() == nullptr) {
    acc.row_lengths.push_back(0);
    return absl::OkStatus();
  }
  FeatureScan scan;
  WireError error;
  if (!ScanFeature(feature, origin, &scan, &error)) return Malformed(error, "Feature", record_name, spec.key);
  if (scan.kind != FeatureKind::kNone && scan.kind != KindOfDType(spec.dtype)) {
    return TypeError(record_name, what, spec.key, index, scan.kind, spec.dtype);
  }
  void* dst = acc.Grow(scan.count);
  if (!DecodeInto(feature, scan, origin, spec.dtype, dst, &error)) {
    return Malformed(error, "Feature", record_name, spec.key);
  }
  acc.row_lengths.push_back(static_cast<int64_t>(scan.count));
  return absl::OkStatus();
}

// Fills one record's fixed feature: `dst` holds shape.num_elements() elements of the dtype.
absl::Status FillFixed(std::string_view feature, const char* origin, const FixedLenFeature& spec,
                       std::string_view record_name, int64_t index, void* dst) {
  const size_t expected = static_cast<size_t>(spec.shape.num_elements());
  if (feature.data() == nullptr) {
    if (!spec.default_value.has_value()) return MissingError(record_name, spec.key, spec.dtype);
    CopyElements(*spec.default_value, spec.dtype, expected, dst);
    return absl::OkStatus();
  }
  FeatureScan scan;
  WireError error;
  if (!ScanFeature(feature, origin, &scan, &error)) return Malformed(error, "Feature", record_name, spec.key);
  if (scan.kind != FeatureKind::kNone && scan.kind != KindOfDType(spec.dtype)) {
    return TypeError(record_name, "Key", spec.key, index, scan.kind, spec.dtype);
  }
  if (scan.count != expected) {
    return CountError(record_name, "Key", spec.key, index, spec.dtype, scan.count, spec.shape);
  }
  if (!DecodeInto(feature, scan, origin, spec.dtype, dst, &error)) {
    return Malformed(error, "Feature", record_name, spec.key);
  }
  return absl::OkStatus();
}

// Collects the spec's features of one serialized Example into slots.
absl::Status CollectExample(std::string_view serialized, const KeyTable& keys, Slots& slots,
                            std::string_view record_name) {
  for (std::string_view& slot : slots) slot = std::string_view();
  const char* origin = serialized.data();
  WireError error;
  const bool ok = ForEachField(serialized, origin, kExampleFeatures, &error,
                               [&](std::string_view features, WireError* e) {
                                 return CollectFeatures(features, origin, keys, slots, e);
                               });
  if (!ok) return Malformed(error, "Example", record_name);
  return absl::OkStatus();
}

std::string BatchRecordName(std::span<const std::string> names, size_t i) {
  if (i < names.size()) return names[i];
  return absl::StrCat("record ", i);
}

}  // namespace

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kNone:
      return "none";
    case FeatureKind::kBytes:
      return "bytes_list";
    case FeatureKind::kFloat:
      return "float_list";
    case FeatureKind::kInt64:
      return "int64_list";
  }
  return "unknown";
}

Feature Feature::Bytes(std::vector<std::string> values) {
  Feature f;
  f.kind = FeatureKind::kBytes;
  f.bytes_list = std::move(values);
  return f;
}

Feature Feature::Floats(std::vector<float> values) {
  Feature f;
  f.kind = FeatureKind::kFloat;
  f.float_list = std::move(values);
  return f;
}

Feature Feature::Int64s(std::vector<int64_t> values) {
  Feature f;
  f.kind = FeatureKind::kInt64;
  f.int64_list = std::move(values);
  return f;
}

size_t Feature::size() const {
  switch (kind) {
    case FeatureKind::kNone:
      return 0;
    case FeatureKind::kBytes:
      return bytes_list.size();
    case FeatureKind::kFloat:
      return float_list.size();
    case FeatureKind::kInt64:
      return int64_list.size();
  }
  return 0;
}

bool operator==(const Feature& a, const Feature& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case FeatureKind::kNone:
      return true;
    case FeatureKind::kBytes:
      return a.bytes_list == b.bytes_list;
    case FeatureKind::kFloat:
      return a.float_list == b.float_list;
    case FeatureKind::kInt64:
      return a.int64_list == b.int64_list;
  }
  return false;
}

int ParseSpec::FixedIndex(std::string_view key) const {
  for (size_t i = 0; i < fixed.size(); ++i) {
    if (fixed[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

int ParseSpec::VarIndex(std::string_view key) const {
  for (size_t i = 0; i < var.size(); ++i) {
    if (var[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

namespace {

absl::Status CheckDType(std::string_view key, DType dtype) {
  if (KindOfDType(dtype) == FeatureKind::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat("Parse spec: feature '", AbslView(key), "' has dtype ", AbslView(DTypeName(dtype)),
                     "; only float, int64 and string are supported (as tf.io)"));
  }
  return absl::OkStatus();
}

// Dtype, shape and default checks; key uniqueness is KeyTable::CheckUnique (it already sorts the keys).
absl::Status CheckFeatures(const SequenceParseSpec& spec) {
  for (const FixedLenSequenceFeature& f : spec.fixed) {
    if (absl::Status s = CheckDType(f.key, f.dtype); !s.ok()) return s;
    if (!f.shape.IsValid()) {
      return absl::InvalidArgumentError(absl::StrCat("Parse spec: feature list '", AbslView(f.key),
                                                     "' has invalid shape ", f.shape.DebugString()));
    }
  }
  for (const VarLenFeature& v : spec.var) {
    if (absl::Status s = CheckDType(v.key, v.dtype); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckFeatures(const ParseSpec& spec) {
  for (const FixedLenFeature& f : spec.fixed) {
    if (absl::Status s = CheckDType(f.key, f.dtype); !s.ok()) return s;
    if (!f.shape.IsValid()) {
      return absl::InvalidArgumentError(absl::StrCat("Parse spec: feature '", AbslView(f.key),
                                                     "' has invalid shape ", f.shape.DebugString()));
    }
    if (f.default_value.has_value()) {
      const Tensor& d = *f.default_value;
      if (d.dtype() != f.dtype || d.num_elements() != f.shape.num_elements()) {
        return absl::InvalidArgumentError(
            absl::StrCat("Parse spec: default value of feature '", AbslView(f.key), "' is ",
                         AbslView(DTypeName(d.dtype())), d.shape().DebugString(), " but the feature is ",
                         AbslView(DTypeName(f.dtype)), f.shape.DebugString()));
      }
    }
  }
  for (const VarLenFeature& v : spec.var) {
    if (absl::Status s = CheckDType(v.key, v.dtype); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateParseSpec(const ParseSpec& spec) {
  if (absl::Status s = CheckFeatures(spec); !s.ok()) return s;
  return KeyTable(spec.fixed, spec.var).CheckUnique();
}

namespace {

// ParseExample on a validated spec and its key table.
absl::StatusOr<ParsedExample> ParseWith(std::string_view serialized, const ParseSpec& spec,
                                        const KeyTable& keys,
                                        const std::shared_ptr<const FeatureNames>& names,
                                        std::string_view record_name) {
  Slots slots(keys.size());
  if (absl::Status s = CollectExample(serialized, keys, slots, record_name); !s.ok()) return s;

  const char* origin = serialized.data();
  ParsedExample out;
  out.names = names;
  out.fixed.reserve(spec.fixed.size());
  for (size_t i = 0; i < spec.fixed.size(); ++i) {
    const FixedLenFeature& f = spec.fixed[i];
    Tensor t = Tensor::Empty(f.dtype, f.shape);
    if (absl::Status s = FillFixed(slots[i], origin, f, record_name, 0, t.raw_data()); !s.ok()) return s;
    out.fixed.push_back(std::move(t));
  }
  out.var.reserve(spec.var.size());
  for (size_t i = 0; i < spec.var.size(); ++i) {
    VarAccumulator acc(spec.var[i].dtype);
    if (absl::Status s = AppendVar(slots[spec.fixed.size() + i], origin, spec.var[i], record_name, "Key", 0, acc);
        !s.ok()) {
      return s;
    }
    out.var.push_back(acc.Finish());
  }
  return out;
}

// ParseExampleBatch on a validated spec and its key table.
absl::StatusOr<ParsedExample> ParseBatchWith(std::span<const std::string_view> serialized,
                                             const ParseSpec& spec, const KeyTable& keys,
                                             const std::shared_ptr<const FeatureNames>& feature_names,
                                             std::span<const std::string> names) {
  if (!names.empty() && names.size() != serialized.size()) {
    return absl::InvalidArgumentError(absl::StrCat("ParseExampleBatch: ", names.size(), " names for ",
                                                   serialized.size(), " records"));
  }
  const int64_t batch = static_cast<int64_t>(serialized.size());
  Slots slots(keys.size());

  ParsedExample out;
  out.names = feature_names;
  out.fixed.reserve(spec.fixed.size());
  std::vector<size_t> row_bytes(spec.fixed.size());
  for (size_t i = 0; i < spec.fixed.size(); ++i) {
    const FixedLenFeature& f = spec.fixed[i];
    out.fixed.push_back(Tensor::Empty(f.dtype, f.shape.Prepend(batch)));
    row_bytes[i] = static_cast<size_t>(f.shape.num_elements()) * DTypeSize(f.dtype);
  }
  std::vector<VarAccumulator> accs;
  accs.reserve(spec.var.size());
  for (const VarLenFeature& v : spec.var) {
    accs.emplace_back(v.dtype);
    accs.back().row_lengths.reserve(serialized.size());
  }

  // Record names are only built when an error needs one.
  for (size_t r = 0; r < serialized.size(); ++r) {
    const std::string_view record = serialized[r];
    absl::Status s = CollectExample(record, keys, slots, {});
    for (size_t i = 0; s.ok() && i < spec.fixed.size(); ++i) {
      char* dst = static_cast<char*>(out.fixed[i].raw_data()) + r * row_bytes[i];
      s = FillFixed(slots[i], record.data(), spec.fixed[i], {}, static_cast<int64_t>(r), dst);
    }
    for (size_t i = 0; s.ok() && i < spec.var.size(); ++i) {
      s = AppendVar(slots[spec.fixed.size() + i], record.data(), spec.var[i], {}, "Key", static_cast<int64_t>(r),
                    accs[i]);
    }
    if (!s.ok()) {
      // Re-run the failing record with its name so the message says which record it was.
      const std::string name = BatchRecordName(names, r);
      absl::StatusOr<ParsedExample> named = ParseWith(record, spec, keys, feature_names, name);
      if (!named.ok()) return named.status();
      return s;  // not expected: the single-record parse agreed the record is fine
    }
  }
  out.var.reserve(accs.size());
  for (VarAccumulator& acc : accs) out.var.push_back(acc.Finish());
  return out;
}

}  // namespace

// The spec and its sorted keys, built once. The table views the spec's key strings, so the two live
// together and never move.
struct ExampleParser::Compiled {
  explicit Compiled(ParseSpec s)
      : spec(std::move(s)), keys(spec.fixed, spec.var), names(FeatureNamesOf(spec)) {}
  const ParseSpec spec;
  const KeyTable keys;
  const std::shared_ptr<const FeatureNames> names;
};

absl::StatusOr<ExampleParser> ExampleParser::Create(ParseSpec spec) {
  if (absl::Status s = CheckFeatures(spec); !s.ok()) return s;
  auto compiled = std::make_shared<const Compiled>(std::move(spec));
  if (absl::Status s = compiled->keys.CheckUnique(); !s.ok()) return s;
  return ExampleParser(std::move(compiled));
}

const ParseSpec& ExampleParser::spec() const { return compiled_->spec; }

absl::StatusOr<ParsedExample> ExampleParser::Parse(std::string_view serialized,
                                                   std::string_view record_name) const {
  return ParseWith(serialized, compiled_->spec, compiled_->keys, compiled_->names, record_name);
}

absl::StatusOr<ParsedExample> ExampleParser::ParseBatch(std::span<const std::string_view> serialized,
                                                        std::span<const std::string> names) const {
  return ParseBatchWith(serialized, compiled_->spec, compiled_->keys, compiled_->names, names);
}

absl::StatusOr<ParsedExample> ParseExample(std::string_view serialized, const ParseSpec& spec,
                                           std::string_view record_name) {
  if (absl::Status s = CheckFeatures(spec); !s.ok()) return s;
  KeyTable keys(spec.fixed, spec.var);
  if (absl::Status s = keys.CheckUnique(); !s.ok()) return s;
  return ParseWith(serialized, spec, keys, FeatureNamesOf(spec), record_name);
}

absl::StatusOr<ParsedExample> ParseExampleBatch(std::span<const std::string_view> serialized,
                                                const ParseSpec& spec, std::span<const std::string> names) {
  if (absl::Status s = CheckFeatures(spec); !s.ok()) return s;
  KeyTable keys(spec.fixed, spec.var);
  if (absl::Status s = keys.CheckUnique(); !s.ok()) return s;
  return ParseBatchWith(serialized, spec, keys, FeatureNamesOf(spec), names);
}

absl::StatusOr<ParsedSequenceExample> ParseSequenceExample(std::string_view serialized,
                                                           const ParseSpec& context_spec,
                                                           const SequenceParseSpec& sequence_spec,
                                                           std::string_view record_name) {
  if (absl::Status s = CheckFeatures(context_spec); !s.ok()) return s;
  if (absl::Status s = CheckFeatures(sequence_spec); !s.ok()) return s;
  KeyTable context_keys(context_spec.fixed, context_spec.var);
  KeyTable list_keys(sequence_spec.fixed, sequence_spec.var);
  if (absl::Status s = context_keys.CheckUnique(); !s.ok()) return s;
  if (absl::Status s = list_keys.CheckUnique(); !s.ok()) return s;
  Slots context_slots(context_keys.size());
  Slots list_slots(list_keys.size());

  const char* origin = serialized.data();
  WireError error;
  wire::Reader r(serialized, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) return Malformed(WireError{r.error(), r.error_offset()}, "SequenceExample", record_name);
    if (type == wire::kLengthDelimited && (field == kSequenceContext || field == kSequenceFeatureLists)) {
      std::string_view body;
      if (!r.ReadBytes(&body)) {
        return Malformed(WireError{r.error(), r.error_offset()}, "SequenceExample", record_name);
      }
      const bool ok = field == kSequenceContext
                          ? CollectFeatures(body, origin, context_keys, context_slots, &error)
                          : CollectFeatures(body, origin, list_keys, list_slots, &error);
      if (!ok) return Malformed(error, "SequenceExample", record_name);
    } else if (!r.Skip(type)) {
      return Malformed(WireError{r.error(), r.error_offset()}, "SequenceExample", record_name);
    }
  }

  ParsedSequenceExample out;
  for (size_t i = 0; i < context_spec.fixed.size(); ++i) {
    const FixedLenFeature& f = context_spec.fixed[i];
    Tensor t = Tensor::Empty(f.dtype, f.shape);
    if (absl::Status s = FillFixed(context_slots[i], origin, f, record_name, 0, t.raw_data()); !s.ok()) return s;
    out.context.fixed.push_back(std::move(t));
  }
  for (size_t i = 0; i < context_spec.var.size(); ++i) {
    VarAccumulator acc(context_spec.var[i].dtype);
    if (absl::Status s = AppendVar(context_slots[context_spec.fixed.size() + i], origin, context_spec.var[i],
                                   record_name, "Key", 0, acc);
        !s.ok()) {
      return s;
    }
    out.context.var.push_back(acc.Finish());
  }

  // The steps of one FeatureList, as views of their Feature messages.
  std::vector<std::string_view> steps;
  auto collect_steps = [&](std::string_view list) -> bool {
    steps.clear();
    return ForEachField(list, origin, kFeatureListFeature, &error, [&](std::string_view step, WireError*) {
      steps.push_back(step);
      return true;
    });
  };

  for (size_t i = 0; i < sequence_spec.fixed.size(); ++i) {
    const FixedLenSequenceFeature& f = sequence_spec.fixed[i];
    const std::string_view list = list_slots[i];
    if (list.data() == nullptr && !f.allow_missing) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Name: ", AbslView(RecordName(record_name)), ", Feature list: ", AbslView(f.key),
          " (data type: ", AbslView(DTypeName(f.dtype)), ") is required but could not be found."));
    }
    if (!collect_steps(list)) return Malformed(error, "FeatureList", record_name, f.key);
    Tensor t = Tensor::Empty(f.dtype, f.shape.Prepend(static_cast<int64_t>(steps.size())));
    const size_t per_step = static_cast<size_t>(f.shape.num_elements());
    for (size_t step = 0; step < steps.size(); ++step) {
      char* dst = static_cast<char*>(t.raw_data()) + step * per_step * DTypeSize(f.dtype);
      FeatureScan scan;
      if (!ScanFeature(steps[step], origin, &scan, &error)) return Malformed(error, "Feature", record_name, f.key);
      if (scan.kind != FeatureKind::kNone && scan.kind != KindOfDType(f.dtype)) {
        return TypeError(record_name, "Feature list", f.key, static_cast<int64_t>(step), scan.kind, f.dtype);
      }
      if (scan.count != per_step) {
        return CountError(record_name, "Feature list", f.key, static_cast<int64_t>(step), f.dtype, scan.count,
                          f.shape);
      }
      if (!DecodeInto(steps[step], scan, origin, f.dtype, dst, &error)) {
        return Malformed(error, "Feature", record_name, f.key);
      }
    }
    out.sequence.fixed.push_back(std::move(t));
  }
  for (size_t i = 0; i < sequence_spec.var.size(); ++i) {
    const VarLenFeature& v = sequence_spec.var[i];
    const std::string_view list = list_slots[sequence_spec.fixed.size() + i];
    VarAccumulator acc(v.dtype);
    if (list.data() != nullptr) {
      if (!collect_steps(list)) return Malformed(error, "FeatureList", record_name, v.key);
      for (size_t step = 0; step < steps.size(); ++step) {
        if (absl::Status s =
                AppendVar(steps[step], origin, v, record_name, "Feature list", static_cast<int64_t>(step), acc);
            !s.ok()) {
          return s;
        }
      }
    }
    out.sequence.var.push_back(acc.Finish());
  }
  out.context.names = FeatureNamesOf(context_spec);
  out.sequence.names = FeatureNamesOf(sequence_spec);
  return out;
}

absl::StatusOr<DecodedExample> DecodeExample(std::string_view serialized, std::string_view record_name) {
  const char* origin = serialized.data();
  DecodedExample out;
  WireError error;
  const bool ok = ForEachField(serialized, origin, kExampleFeatures, &error, [&](std::string_view features,
                                                                                 WireError* e) {
    return ForEachMapEntry(features, origin, e, [&](std::string_view key, std::string_view value, WireError* e2) {
      Feature feature;
      if (!DecodeOwned(value, origin, &feature, e2)) return false;
      out.features.insert_or_assign(std::string(key), std::move(feature));
      return true;
    });
  });
  if (!ok) return Malformed(error, "Example", record_name);
  return out;
}

absl::StatusOr<DecodedSequenceExample> DecodeSequenceExample(std::string_view serialized,
                                                             std::string_view record_name) {
  const char* origin = serialized.data();
  DecodedSequenceExample out;
  WireError error;
  auto on_context_entry = [&](std::string_view key, std::string_view value, WireError* e) {
    Feature feature;
    if (!DecodeOwned(value, origin, &feature, e)) return false;
    out.context.insert_or_assign(std::string(key), std::move(feature));
    return true;
  };
  auto on_list_entry = [&](std::string_view key, std::string_view value, WireError* e) {
    std::vector<Feature> steps;
    const bool ok = ForEachField(value, origin, kFeatureListFeature, e, [&](std::string_view step, WireError* e2) {
      Feature feature;
      if (!DecodeOwned(step, origin, &feature, e2)) return false;
      steps.push_back(std::move(feature));
      return true;
    });
    if (!ok) return false;
    out.feature_lists.insert_or_assign(std::string(key), std::move(steps));
    return true;
  };
  wire::Reader r(serialized, origin);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.ReadTag(&field, &type)) break;
    if (type == wire::kLengthDelimited && (field == kSequenceContext || field == kSequenceFeatureLists)) {
      std::string_view body;
      if (!r.ReadBytes(&body)) break;
      const bool ok = field == kSequenceContext ? ForEachMapEntry(body, origin, &error, on_context_entry)
                                                : ForEachMapEntry(body, origin, &error, on_list_entry);
      if (!ok) return Malformed(error, "SequenceExample", record_name);
    } else if (!r.Skip(type)) {
      break;
    }
  }
  if (r.error() != nullptr) return Malformed(WireError{r.error(), r.error_offset()}, "SequenceExample", record_name);
  return out;
}

}  // namespace sluice
