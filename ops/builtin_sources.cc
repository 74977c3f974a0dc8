// The sources and ParseExample: with the built-in types (builtin_*_types.cc), what every process can
// rebuild with no user code.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/builtin_registrations.h"
#include "sluice/ops/registration.h"

namespace sluice {
namespace {

using registration_detail::Built;
using registration_detail::Erase;

absl::StatusOr<Compression> CompressionParam(const OpBuildInput& in) {
  absl::StatusOr<std::string> name = in.Get<std::string>("compression");
  if (!name.ok()) return name.status();
  absl::StatusOr<Compression> compression = ParseCompression(*name);
  if (!compression.ok()) return in.Error(compression.status().message());
  return compression;
}

bool RegisterSources() {
  const std::string int64 = ElementTypeName<int64_t>();
  const std::string string = ElementTypeName<std::string>();
  RegisterOpBuilder("Range", int64, "", [](const OpBuildInput& in) -> Built {
    SLUICE_REGISTRATION_ASSIGN_(start, in.Get<int64_t>("start"));
    SLUICE_REGISTRATION_ASSIGN_(stop, in.Get<int64_t>("stop"));
    SLUICE_REGISTRATION_ASSIGN_(step, in.Get<int64_t>("step"));
    return Erase(Range(start, stop, step));
  });
  // The record sources share one node type; the op name is the format.
  auto record_files = [](ops::RecordFormat format) {
    return [format](const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(files, in.Get<std::vector<std::string>>("files"));
      SLUICE_REGISTRATION_ASSIGN_(compression, CompressionParam(in));
      SLUICE_REGISTRATION_ASSIGN_(mode_name, in.Get<std::string>("read_mode"));
      absl::StatusOr<ReadMode> read_mode = ops::ParseReadMode(mode_name);
      if (!read_mode.ok()) return in.Error(read_mode.status().message());
      SLUICE_REGISTRATION_ASSIGN_(buffer_size, in.GetOptional<int64_t>("buffer_size"));
      if (buffer_size.value_or(0) < 0) return in.Error("buffer_size < 0");
      if (format != ops::RecordFormat::kFixedLength) {
        return std::shared_ptr<const OpNode>(std::make_shared<ops::RecordFileNode>(
            std::move(files), format, compression, ops::FixedLengthLayout{}, *read_mode,
            buffer_size.value_or(0)));
      }
      SLUICE_REGISTRATION_ASSIGN_(record_bytes, in.Get<int64_t>("record_bytes"));
      SLUICE_REGISTRATION_ASSIGN_(header_bytes, in.Get<int64_t>("header_bytes"));
      SLUICE_REGISTRATION_ASSIGN_(footer_bytes, in.Get<int64_t>("footer_bytes"));
      return Erase(FixedLengthRecords(std::move(files), record_bytes, header_bytes, footer_bytes, compression,
                                      *read_mode));
    };
  };
  RegisterOpBuilder("TFRecord", string, "", record_files(ops::RecordFormat::kTFRecord));
  RegisterOpBuilder("TextLines", string, "", record_files(ops::RecordFormat::kTextLines));
  RegisterOpBuilder("FixedLengthRecords", string, "", record_files(ops::RecordFormat::kFixedLength));
  // The matched list is the definition: another process reads the same files, it does not glob again.
  RegisterOpBuilder("ListFiles", string, "", [](const OpBuildInput& in) -> Built {
    SLUICE_REGISTRATION_ASSIGN_(files, in.Get<std::vector<std::string>>("files"));
    SLUICE_REGISTRATION_ASSIGN_(shuffle, in.Get<bool>("shuffle"));
    SLUICE_REGISTRATION_ASSIGN_(seed, in.GetOptional<int64_t>("seed"));
    std::optional<uint64_t> unsigned_seed;
    if (seed) unsigned_seed = static_cast<uint64_t>(*seed);
    return std::shared_ptr<const OpNode>(std::make_shared<ops::ListFilesNode>(std::move(files), shuffle, unsigned_seed));
  });
  auto parse = [](auto input_tag) {
    using In = decltype(input_tag);
    return [](const OpBuildInput& in) -> Built {
      SLUICE_REGISTRATION_ASSIGN_(input, in.Input<In>(0));
      SLUICE_REGISTRATION_ASSIGN_(encoded, in.Get<EncodedParam>("spec"));
      SLUICE_REGISTRATION_ASSIGN_(spec, ops::DecodeParseSpec(encoded.bytes));
      return Erase(Dataset<In>(input).ParseExample(std::move(spec)));
    };
  };
  RegisterOpBuilder("ParseExample", ElementTypeName<ParsedExample>(), string, parse(std::string()));
  RegisterOpBuilder("ParseExample", ElementTypeName<ParsedExample>(), ElementTypeName<std::vector<std::string>>(),
                    parse(std::vector<std::string>()));
  return true;
}

}  // namespace

// Called, not run at static initialisation: the library is also an archive, and the linker keeps an
// archive member only when something references it.
void EnsureBuiltinOpBuilders() {
  static const bool done = [] {
    RegisterBuiltinInt64Types();
    RegisterBuiltinRecordTypes();
    RegisterBuiltinTensorTypes();
    return RegisterSources();
  }();
  (void)done;
}
}  // namespace sluice
