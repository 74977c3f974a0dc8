#include "tools/sluice/idx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/zlib_stream.h"

namespace sluice::io {
namespace {

constexpr size_t kReadChunkBytes = size_t{1} << 20;

bool KnownType(uint8_t t) {
  switch (t) {
    case 0x08:
    case 0x09:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x0E:
      return true;
    default:
      return false;
  }
}

uint32_t LoadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

uint64_t LoadBigEndian(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

struct Header {
  IdxType type;
  std::vector<uint32_t> dims;
  uint64_t header_bytes;
  uint64_t total_bytes;  // header + data, what the file must hold exactly
};

std::string DescribeShape(const Header& h) {
  return absl::StrCat(h.header_bytes, "-byte header + ", absl::StrJoin(h.dims, "x"), " ", IdxTypeName(h.type),
                      " elements");
}

// Parses the header from the first bytes of the (decompressed) stream. Returns std::nullopt when `data`
// is too short to hold the whole header yet; errors are InvalidArgument for a header that is not IDX.
absl::StatusOr<std::optional<Header>> TryParseHeader(absl::string_view data, absl::string_view name) {
  if (data.size() >= 2 && (data[0] != 0 || data[1] != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not an IDX file: magic number must start with two zero bytes, found 0x",
                     absl::Hex(static_cast<unsigned char>(data[0]), absl::kZeroPad2),
                     absl::Hex(static_cast<unsigned char>(data[1]), absl::kZeroPad2)));
  }
  if (data.size() < 4) return std::nullopt;
  const auto type_byte = static_cast<uint8_t>(data[2]);
  const auto ndims = static_cast<uint8_t>(data[3]);
  if (!KnownType(type_byte)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": IDX magic 0x", absl::Hex(LoadBigEndian32(data.data()), absl::kZeroPad8),
                     " has unknown element type byte 0x", absl::Hex(type_byte, absl::kZeroPad2),
                     " (expected 08, 09, 0B, 0C, 0D or 0E)"));
  }
  if (ndims == 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": IDX magic 0x",
                                                   absl::Hex(LoadBigEndian32(data.data()), absl::kZeroPad8),
                                                   " declares zero dimensions"));
  }
  Header h;
  h.type = static_cast<IdxType>(type_byte);
  h.header_bytes = 4 + 4 * uint64_t{ndims};
  if (data.size() < h.header_bytes) return std::nullopt;
  h.dims.reserve(ndims);
  // Products are checked against 2^63 so the total always fits, with room for the header.
  constexpr uint64_t kMax = uint64_t{1} << 62;
  uint64_t bytes = IdxElementSize(h.type);
  for (size_t i = 0; i < ndims; ++i) {
    const uint32_t d = LoadBigEndian32(data.data() + 4 + 4 * i);
    h.dims.push_back(d);
    if (d != 0 && bytes > kMax / d) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": IDX dimensions ", absl::StrJoin(h.dims, "x"),
                                                     "... overflow a 64-bit byte count"));
    }
    bytes *= d;
  }
  h.total_bytes = h.header_bytes + bytes;
  return h;
}

absl::Status SizeMismatch(const Header& h, uint64_t actual, absl::string_view name, bool compressed) {
  const char* what = actual < h.total_bytes ? "truncated IDX file" : "IDX file has trailing bytes";
  return absl::DataLossError(absl::StrCat(name, ": ", what, ": expected ", h.total_bytes, " bytes (",
                                          DescribeShape(h), "), ",
                                          compressed ? "decompressed stream has " : "file has ", actual));
}

absl::StatusOr<IdxArray> Finalize(Header h, std::string bytes, uint64_t actual, absl::string_view name,
                                  bool compressed) {
  if (actual != h.total_bytes) return SizeMismatch(h, actual, name, compressed);
  IdxArray array;
  array.type = h.type;
  array.dims = std::move(h.dims);
  bytes.erase(0, h.header_bytes);
  array.bytes = std::move(bytes);
  return array;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat(path, ": cannot open IDX file"));
  struct stat st;
  std::string data;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) data.reserve(static_cast<size_t>(st.st_size));
  for (;;) {
    const size_t old = data.size();
    data.resize(old + kReadChunkBytes);
    const ssize_t n = ::read(fd, data.data() + old, kReadChunkBytes);
    if (n < 0) {
      const int err = errno;
      data.resize(old);
      if (err == EINTR) continue;
      ::close(fd);
      return absl::ErrnoToStatus(err, absl::StrCat(path, ": read failed at offset ", old));
    }
    data.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
  }
  ::close(fd);
  return data;
}

absl::StatusOr<IdxArray> InflateIdx(const std::string& compressed, const std::string& path) {
  const std::string name = absl::StrCat(path, " (gzip)");
  Inflater inflater(ZlibFormat::kGzip, path);
  std::string out;
  std::optional<Header> header;
  uint64_t produced = 0;
  // Once the output is a chunk past the expected size the file is wrong anyway: stop storing and only
  // count, so a hostile stream cannot grow memory beyond the size its header claims.
  uint64_t store_limit = std::numeric_limits<uint64_t>::max();
  auto consume = [&](std::span<const std::byte> piece) -> absl::Status {
    produced += piece.size();
    if (out.size() < store_limit) {
      const size_t room = static_cast<size_t>(std::min<uint64_t>(store_limit - out.size(), piece.size()));
      out.append(reinterpret_cast<const char*>(piece.data()), room);
    }
    if (!header) {
      absl::StatusOr<std::optional<Header>> h = TryParseHeader(out, name);
      if (!h.ok()) return h.status();
      if (*h) {
        header = std::move(**h);
        store_limit = header->total_bytes + 1;
        if (out.size() > store_limit) out.resize(static_cast<size_t>(store_limit));
        if (out.capacity() < store_limit) out.reserve(static_cast<size_t>(store_limit));
      }
    }
    return absl::OkStatus();
  };
  inflater.Feed(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(compressed.data()), compressed.size()));
  for (;;) {
    absl::StatusOr<std::span<const std::byte>> piece = inflater.Next();
    if (!piece.ok()) return piece.status();
    if (piece->empty()) break;
    if (absl::Status s = consume(*piece); !s.ok()) return s;
  }
  if (absl::Status s = inflater.Finish(); !s.ok()) return s;
  if (!header) {
    return absl::DataLossError(
        absl::StrCat(name, ": truncated IDX file: ", produced, " bytes do not hold a whole header"));
  }
  out.resize(static_cast<size_t>(std::min<uint64_t>(out.size(), header->total_bytes)));
  return Finalize(*std::move(header), std::move(out), produced, name, /*compressed=*/true);
}

}  // namespace

size_t IdxElementSize(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 1;
}

absl::string_view IdxTypeName(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
      return "uint8";
    case IdxType::kInt8:
      return "int8";
    case IdxType::kInt16:
      return "int16";
    case IdxType::kInt32:
      return "int32";
    case IdxType::kFloat32:
      return "float32";
    case IdxType::kFloat64:
      return "float64";
  }
  return "?";
}

uint64_t IdxArray::num_elements() const {
  uint64_t n = 1;
  for (uint32_t d : dims) n *= d;
  return n;
}

int64_t IdxArray::ElementAsInt64(uint64_t i) const {
  const size_t size = element_size();
  const uint64_t raw = LoadBigEndian(bytes.data() + i * size, size);
  switch (type) {
    case IdxType::kUint8:
      return static_cast<int64_t>(raw);
    case IdxType::kInt8:
      return static_cast<int8_t>(raw);
    case IdxType::kInt16:
      return static_cast<int16_t>(raw);
    case IdxType::kInt32:
      return static_cast<int32_t>(raw);
    case IdxType::kFloat32:
    case IdxType::kFloat64: {
      // Out-of-range and NaN conversions are undefined behaviour, so they saturate (NaN gives 0).
      const double d = ElementAsDouble(i);
      if (!(d == d)) return 0;
      if (d >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      if (d <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(d);
    }
  }
  return 0;
}

double IdxArray::ElementAsDouble(uint64_t i) const {
  const size_t size = element_size();
  const uint64_t raw = LoadBigEndian(bytes.data() + i * size, size);
  if (type == IdxType::kFloat32) {
    const auto bits = static_cast<uint32_t>(raw);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (type == IdxType::kFloat64) {
    double d;
    std::memcpy(&d, &raw, sizeof d);
    return d;
  }
  return static_cast<double>(ElementAsInt64(i));
}

absl::StatusOr<IdxArray> ParseIdx(std::string bytes, absl::string_view name) {
  absl::StatusOr<std::optional<Header>> header = TryParseHeader(bytes, name);
  if (!header.ok()) return header.status();
  if (!*header) {
    return absl::DataLossError(
        absl::StrCat(name, ": truncated IDX file: ", bytes.size(), " bytes do not hold a whole header"));
  }
  const uint64_t actual = bytes.size();
  return Finalize(**std::move(header), std::move(bytes), actual, name, /*compressed=*/false);
}

absl::StatusOr<IdxArray> ReadIdxFile(std::string path) {
  absl::StatusOr<std::string> raw = ReadWholeFile(path);
  if (!raw.ok()) return raw.status();
  if (raw->size() >= 2 && static_cast<unsigned char>((*raw)[0]) == 0x1F &&
      static_cast<unsigned char>((*raw)[1]) == 0x8B) {
    return InflateIdx(*raw, path);
  }
  return ParseIdx(*std::move(raw), path);
}

}  // namespace sluice::io
