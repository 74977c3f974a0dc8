// The library's registered functions (sluice/ops/library_functions.h).
#include "sluice/ops/library_functions.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sluice/io/tfrecord.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/file_sources.h"
#include "sluice/ops/registration.h"

namespace sluice {
namespace {

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
         dtype == DType::kFloat64;
}

// Element `i` of a numeric tensor, widened; integers stay exact up to 2^53 (TensorFlow's cast to float
// rounds the same way).
double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kBool:
      return t.data<bool>()[i] ? 1.0 : 0.0;
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kFloat16:
      return HalfToFloat(t.data<Half>()[i]);
    case DType::kBFloat16:
      return BFloat16ToFloat(t.data<BFloat16>()[i]);
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    case DType::kString:
      break;
  }
  return 0.0;
}

// first * scale + offset in `to` (tf.cast then arithmetic: float -> integer truncates toward zero).
Tensor CastScaled(const Tensor& from, DType to, double scale, double offset) {
  Tensor out = Tensor::Empty(to, from.shape());
  const int64_t n = from.num_elements();
  const bool affine = scale != 1.0 || offset != 0.0;
  if (to == DType::kFloat32 && from.dtype() == DType::kUInt8) {  // the common image case, kept tight
    const uint8_t* in = from.data<uint8_t>();
    float* dst = out.data<float>();
    const float s = static_cast<float>(scale), o = static_cast<float>(offset);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(in[i]) * s + o;
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = ElementAsDouble(from, i);
    if (affine) v = v * scale + offset;
    switch (to) {
      case DType::kBool:
        out.data<bool>()[i] = v != 0.0;
        break;
      case DType::kUInt8:
        out.data<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
        break;
      case DType::kInt32:
        out.data<int32_t>()[i] = static_cast<int32_t>(static_cast<int64_t>(v));
        break;
      case DType::kInt64:
        out.data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      case DType::kFloat16:
        out.data<Half>()[i] = FloatToHalf(static_cast<float>(v));
        break;
      case DType::kBFloat16:
        out.data<BFloat16>()[i] = FloatToBFloat16(static_cast<float>(v));
        break;
      case DType::kFloat32:
        out.data<float>()[i] = static_cast<float>(v);
        break;
      case DType::kFloat64:
        out.data<double>()[i] = v;
        break;
      case DType::kString:
        break;
    }
  }
  return out;
}

struct DecodeRawOptions {
  DType dtype = DType::kUInt8;
  bool little_endian = true;
  std::optional<std::vector<int64_t>> shape;
};

absl::StatusOr<DecodeRawOptions> DecodeRawOptionsFrom(const FunctionArgs& args, std::string_view key) {
  DecodeRawOptions options;
  absl::StatusOr<std::string> name = args.Get<std::string>(absl::string_view(key.data(), key.size()));
  if (!name.ok()) return name.status();
  absl::StatusOr<DType> dtype = ParseDTypeName(*name);
  if (!dtype.ok()) return dtype.status();
  if (*dtype == DType::kString) return absl::InvalidArgumentError("decode_raw cannot produce strings");
  options.dtype = *dtype;
  absl::StatusOr<bool> little_endian = args.GetOr<bool>("little_endian", true);
  if (!little_endian.ok()) return little_endian.status();
  options.little_endian = *little_endian;
  if (args.Has("shape")) {
    absl::StatusOr<std::vector<int64_t>> shape = args.Get<std::vector<int64_t>>("shape");
    if (!shape.ok()) return shape.status();
    if (std::count(shape->begin(), shape->end(), -1) > 1) {
      return absl::InvalidArgumentError("decode_raw: shape has more than one -1");
    }
    for (int64_t d : *shape) {
      if (d < -1) return absl::InvalidArgumentError(absl::StrCat("decode_raw: shape has dimension ", d));
    }
    options.shape = *shape;
  }
  return options;
}

absl::StatusOr<Tensor> DecodeRawBytes(std::string_view bytes, const DecodeRawOptions& options) {
  const size_t size = DTypeSize(options.dtype);
  if (bytes.size() % size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("decode_raw: ", bytes.size(),
                                                   " bytes are not a multiple of ", Sv(DTypeName(options.dtype)),
                                                   "'s ", size, " bytes"));
  }
  const int64_t count = static_cast<int64_t>(bytes.size() / size);
  std::vector<int64_t> dims = {count};
  if (options.shape) {
    dims = *options.shape;
    int64_t known = 1;
    for (int64_t d : dims) {
      if (d != -1) known *= d;
    }
    for (int64_t& d : dims) {
      if (d == -1) d = known == 0 ? 0 : count / known;
    }
    int64_t total = 1;
    for (int64_t d : dims) total *= d;
    if (total != count) {
      return absl::InvalidArgumentError(
          absl::StrCat("decode_raw: ", count, " ", Sv(DTypeName(options.dtype)), " values do not fit the shape"));
    }
  }
  Tensor out = Tensor::Empty(options.dtype, Shape(std::move(dims)));
  char* dst = static_cast<char*>(out.raw_data());
  if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
  const bool swap = options.little_endian != (std::endian::native == std::endian::little);
  if (swap && size > 1) {
    for (int64_t i = 0; i < count; ++i) std::reverse(dst + i * size, dst + (i + 1) * size);
  }
  return out;
}

absl::StatusOr<Compression> CompressionFor(std::string_view path, const std::string& name) {
  if (name != "auto") return ParseCompression(absl::string_view(name.data(), name.size()));
  absl::string_view p(path.data(), path.size());
  if (absl::EndsWith(p, ".gz")) return Compression::kGzip;
  if (absl::EndsWith(p, ".zlib")) return Compression::kZlib;
  return Compression::kNone;
}

std::function<Dataset<std::string>(std::string)> MakeReadTFRecord(std::string compression, ReadMode read_mode,
                                                                  int64_t buffer_size) {
  return [compression = std::move(compression), read_mode, buffer_size](std::string path) {
    absl::StatusOr<Compression> chosen = CompressionFor(path, compression);
    if (!chosen.ok())
      return Dataset<std::string>(ops::MakeErrorSource<std::string>("TFRecord", chosen.status()));
    return Dataset<std::string>(std::make_shared<ops::RecordFileNode>(
        std::vector<std::string>{std::move(path)}, ops::RecordFormat::kTFRecord, *chosen,
        ops::FixedLengthLayout{}, read_mode, buffer_size));
  };
}

absl::StatusOr<std::function<Dataset<std::string>(std::string)>> ReadTFRecordFactory(
    const FunctionArgs& args) {
  absl::StatusOr<std::string> compression = args.GetOr<std::string>("compression", "auto");
  if (!compression.ok()) return compression.status();
  if (*compression != "auto") {
    absl::StatusOr<Compression> parsed = ParseCompression(*compression);
    if (!parsed.ok()) return parsed.status();
  }
  absl::StatusOr<std::string> mode_name = args.GetOr<std::string>("read_mode", "auto");
  if (!mode_name.ok()) return mode_name.status();
  absl::StatusOr<ReadMode> mode = ops::ParseReadMode(*mode_name);
  if (!mode.ok()) return mode.status();
  absl::StatusOr<int64_t> buffer_size = args.GetOr<int64_t>("buffer_size", 0);
  if (!buffer_size.ok()) return buffer_size.status();
  if (*buffer_size < 0) return absl::InvalidArgumentError(absl::StrCat("buffer_size ", *buffer_size, " < 0"));
  return MakeReadTFRecord(*compression, *mode, *buffer_size);
}

absl::StatusOr<std::function<absl::StatusOr<Tensor>(std::string)>> DecodeRawFactory(
    const FunctionArgs& args) {
  absl::StatusOr<DecodeRawOptions> options = DecodeRawOptionsFrom(args, "dtype");
  if (!options.ok()) return options.status();
  return [options = *options](std::string bytes) { return DecodeRawBytes(bytes, options); };
}

struct ExampleToPair {
  int64_t first = 0;
  int64_t second = 1;
  // Set when the argument names a feature instead of giving its index.
  std::string first_name;
  std::string second_name;
  std::optional<DecodeRawOptions> decode_raw;
  std::optional<DType> cast;
  double scale = 1.0;
  double offset = 0.0;

  // The index of fixed feature `name` in `example`'s names.
  static absl::StatusOr<int64_t> IndexOf(const ParsedExample& example, const std::string& name) {
    if (example.names == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("example_to_pair: asked for feature '", name, "', the Example has no feature names"));
    }
    const std::vector<std::string>& keys = example.names->fixed;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == name) return static_cast<int64_t>(i);
    }
    return absl::InvalidArgumentError(absl::StrCat("example_to_pair: no fixed feature '", name,
                                                   "'; the Example's are ", absl::StrJoin(keys, ", ")));
  }

  absl::StatusOr<std::pair<Tensor, Tensor>> operator()(ParsedExample example) const {
    int64_t first = this->first;
    int64_t second = this->second;
    if (!first_name.empty()) {
      absl::StatusOr<int64_t> index = IndexOf(example, first_name);
      if (!index.ok()) return index.status();
      first = *index;
    }
    if (!second_name.empty()) {
      absl::StatusOr<int64_t> index = IndexOf(example, second_name);
      if (!index.ok()) return index.status();
      second = *index;
    }
    const int64_t fixed = static_cast<int64_t>(example.fixed.size());
    if (first >= fixed || second >= fixed) {
      return absl::InvalidArgumentError(absl::StrCat("example_to_pair: the Example has ", fixed,
                                                     " fixed features, asked for ", first, " and ", second));
    }
    Tensor a = std::move(example.fixed[first]);
    Tensor b = std::move(example.fixed[second]);
    if (decode_raw) {
      if (a.dtype() != DType::kString || a.num_elements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("example_to_pair: decode_raw needs one string in feature ", first, ", it holds ",
                         a.DebugString(4)));
      }
      absl::StatusOr<Tensor> decoded = DecodeRawBytes(a.data<std::string>()[0], *decode_raw);
      if (!decoded.ok()) return decoded.status();
      a = *std::move(decoded);
    }
    if (cast || scale != 1.0 || offset != 0.0) {
      const DType to = cast.value_or(a.dtype());
      if (a.dtype() == DType::kString) {
        return absl::InvalidArgumentError(
            absl::StrCat("example_to_pair: feature ", first, " holds strings; decode_raw them first"));
      }
      a = CastScaled(a, to, scale, offset);
    }
    return std::pair<Tensor, Tensor>(std::move(a), std::move(b));
  }
};

absl::StatusOr<std::function<absl::StatusOr<std::pair<Tensor, Tensor>>(ParsedExample)>> ExampleToPairFactory(
    const FunctionArgs& args) {
  ExampleToPair f;
  // A feature may be named instead of indexed: {"first", std::string("image")}.
  if (absl::StatusOr<std::string> name = args.Get<std::string>("first"); name.ok()) {
    if (name->empty()) return absl::InvalidArgumentError("example_to_pair: an empty feature name");
    f.first_name = *name;
  }
  if (absl::StatusOr<std::string> name = args.Get<std::string>("second"); name.ok()) {
    if (name->empty()) return absl::InvalidArgumentError("example_to_pair: an empty feature name");
    f.second_name = *name;
  }
  absl::StatusOr<int64_t> first = f.first_name.empty() ? args.GetOr<int64_t>("first", 0) : int64_t{0};
  absl::StatusOr<int64_t> second = f.second_name.empty() ? args.GetOr<int64_t>("second", 1) : int64_t{1};
  if (!first.ok()) return first.status();
  if (!second.ok()) return second.status();
  if (*first < 0 || *second < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("example_to_pair: negative feature index ", std::min(*first, *second)));
  }
  f.first = *first;
  f.second = *second;
  if (args.Has("decode_raw")) {
    absl::StatusOr<DecodeRawOptions> options = DecodeRawOptionsFrom(args, "decode_raw");
    if (!options.ok()) return options.status();
    f.decode_raw = *options;
  }
  if (args.Has("cast")) {
    absl::StatusOr<std::string> name = args.Get<std::string>("cast");
    if (!name.ok()) return name.status();
    absl::StatusOr<DType> dtype = ParseDTypeName(*name);
    if (!dtype.ok()) return dtype.status();
    if (*dtype == DType::kString) return absl::InvalidArgumentError("example_to_pair: cannot cast to string");
    f.cast = *dtype;
  }
  absl::StatusOr<double> scale = args.GetOr<double>("scale", 1.0);
  absl::StatusOr<double> offset = args.GetOr<double>("offset", 0.0);
  if (!scale.ok()) return scale.status();
  if (!offset.ok()) return offset.status();
  f.scale = *scale;
  f.offset = *offset;
  if ((f.scale != 1.0 || f.offset != 0.0)) {
    const std::optional<DType> result =
        f.cast ? f.cast : (f.decode_raw ? std::optional(f.decode_raw->dtype) : std::nullopt);
    if (result && !IsFloating(*result)) {
      return absl::InvalidArgumentError(
          absl::StrCat("example_to_pair: scale and offset need a floating dtype, not ", Sv(DTypeName(*result)),
                       " (cast to float first)"));
    }
  }
  return std::function<absl::StatusOr<std::pair<Tensor, Tensor>>(ParsedExample)>(std::move(f));
}

}  // namespace

Dataset<std::string> TFRecord(std::vector<std::string> files, const TFRecordOptions& options) {
  if (options.buffer_size < 0 || options.num_parallel_reads < kAutotune) {
    return Dataset<std::string>(ops::MakeErrorSource<std::string>(
        "TFRecord",
        absl::InvalidArgumentError(absl::StrCat("TFRecord: buffer_size (", options.buffer_size,
                                                ") must be >= 0 and num_parallel_reads (",
                                                options.num_parallel_reads, ") >= 0 or kAutotune"))));
  }
  if (options.num_parallel_reads == 0) {
    return Dataset<std::string>(std::make_shared<ops::RecordFileNode>(
        std::move(files), ops::RecordFormat::kTFRecord, options.compression, ops::FixedLengthLayout{},
        options.read_mode, options.buffer_size));
  }
  // As tf.data's TFRecordDataset: a parallel interleave of one reader per file, a record from each in
  // turn. The file list is a ListFiles (unshuffled), so auto-shard by FILE cuts it.
  std::vector<Param> args{{"compression", std::string(CompressionName(options.compression))},
                          {"read_mode", std::string(ops::ReadModeName(options.read_mode))}};
  if (options.buffer_size > 0) args.push_back({"buffer_size", options.buffer_size});
  const int64_t calls = options.num_parallel_reads;
  return Dataset<std::string>(
             std::make_shared<ops::ListFilesNode>(std::move(files), /*shuffle=*/false, std::nullopt))
      .Interleave(kReadTFRecord.With(FunctionArgs(std::move(args))), /*cycle_length=*/calls,
                  /*block_length=*/1,
                  /*num_parallel_calls=*/calls, options.deterministic);
}

namespace {

bool RegisterLibraryFunctions() {
  registration_detail::RegisterFunctionAtStartup(kReadTFRecord, ReadTFRecordFactory);
  registration_detail::RegisterFunctionAtStartup(kDecodeRaw, DecodeRawFactory);
  registration_detail::RegisterFunctionAtStartup(kExampleToPair, ExampleToPairFactory);
  return true;
}

}  // namespace

absl::StatusOr<DType> ParseDTypeName(std::string_view name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "float64") return DType::kFloat64;
  if (name == "float16") return DType::kFloat16;
  std::string names;
  for (int d = 0; d <= static_cast<int>(kLastDType); ++d) {
    const auto dtype = static_cast<DType>(d);
    if (DTypeName(dtype) == name) return dtype;
    absl::StrAppend(&names, d == 0 ? "" : ", ", Sv(DTypeName(dtype)));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", Sv(name), "' (", names, ")"));
}

// Called from FindFunction, not run at static initialisation: the library is also an archive.
void EnsureLibraryFunctions() {
  static const bool registered = RegisterLibraryFunctions();
  (void)registered;
}

}  // namespace sluice
