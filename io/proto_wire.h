// Internal: a minimal protocol-buffer wire-format reader and writer, enough for tf.train.Example.
//
// Contract:
// - Reader walks a std::string_view without copying; every read is bounds-checked and a failure leaves a
//   static reason (error()) and the absolute byte offset where it happened (error_offset()), counted from
//   `origin`, the first byte of the whole record, so nested readers report positions in the record.
// - Malformed input (truncated varint, varint longer than 10 bytes, length past the end, wire types 3/4
//   (groups), 6 and 7, field number 0) makes the call return false; it never reads out of bounds.
// - Writer functions append to a std::string.
// - Threading: a Reader is a cursor owned by one thread.
//
//   wire::Reader r(bytes, bytes.data());
//   uint32_t field, type;
//   while (!r.done()) {
//     if (!r.ReadTag(&field, &type)) return Error(r);
//     if (field == 1 && type == wire::kLengthDelimited) { std::string_view v; r.ReadBytes(&v); }
//     else if (!r.Skip(type)) return Error(r);
//   }
#ifndef SLUICE_IO_PROTO_WIRE_H_
#define SLUICE_IO_PROTO_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr size_t kMaxVarintBytes = 10;

class Reader {
 public:
  // `origin` is the start of the enclosing record; `data` must lie inside it.
  Reader(std::string_view data, const char* origin)
      : p_(data.data()), end_(data.data() + data.size()), origin_(origin) {}
  explicit Reader(std::string_view data) : Reader(data, data.data()) {}

  bool done() const { return p_ >= end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const char* position() const { return p_; }
  // Byte offset of the cursor from the record origin.
  size_t offset() const { return static_cast<size_t>(p_ - origin_); }
  const char* origin() const { return origin_; }

  const char* error() const { return error_; }
  size_t error_offset() const { return error_offset_; }

  bool ReadVarint(uint64_t* value) {
    // Fast path: one-byte varints dominate tags and small lengths.
    if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) {
      *value = static_cast<uint8_t>(*p_++);
      return true;
    }
    return ReadVarintSlow(value);
  }

  // Reads a tag and validates the wire type. Groups are rejected: Example has none and skipping them
  // correctly needs recursion that malformed input could exploit.
  bool ReadTag(uint32_t* field, uint32_t* type) {
    const char* start = p_;
    uint64_t tag;
    if (!ReadVarint(&tag)) return false;
    *type = static_cast<uint32_t>(tag & 7);
    const uint64_t number = tag >> 3;
    if (number == 0 || number > 0x1fffffff) return FailAt("invalid field number 0 or above 2^29-1", start);
    if (*type == kStartGroup || *type == kEndGroup) return FailAt("group wire type is not supported", start);
    if (*type > kFixed32) return FailAt("invalid wire type 6 or 7", start);
    *field = static_cast<uint32_t>(number);
    return true;
  }

  bool ReadFixed32(uint32_t* value) {
    if (remaining() < 4) return FailAt("truncated 32-bit value", p_);
    std::memcpy(value, p_, 4);  // little-endian host assumed (x86-64, aarch64)
    p_ += 4;
    return true;
  }

  bool ReadFixed64(uint64_t* value) {
    if (remaining() < 8) return FailAt("truncated 64-bit value", p_);
    std::memcpy(value, p_, 8);
    p_ += 8;
    return true;
  }

  // A length-delimited payload, as a view into the input.
  bool ReadBytes(std::string_view* out) {
    uint64_t length;
    if (!ReadVarint(&length)) return false;
    if (length > remaining()) return FailAt("length-delimited field runs past the end of its message", p_);
    *out = std::string_view(p_, static_cast<size_t>(length));
    p_ += length;
    return true;
  }

  // Skips the value of a field whose tag was just read.
  bool Skip(uint32_t type) {
    switch (type) {
      case kVarint: {
        uint64_t ignored;
        return ReadVarint(&ignored);
      }
      case kFixed64:
        if (remaining() < 8) return FailAt("truncated 64-bit value", p_);
        p_ += 8;
        return true;
      case kLengthDelimited: {
        std::string_view ignored;
        return ReadBytes(&ignored);
      }
      case kFixed32:
        if (remaining() < 4) return FailAt("truncated 32-bit value", p_);
        p_ += 4;
        return true;
      default:
        return FailAt("unsupported wire type", p_);
    }
  }

  // Records an error found at `where` and returns false.
  bool FailAt(const char* why, const char* where) {
    error_ = why;
    error_offset_ = static_cast<size_t>(where - origin_);
    return false;
  }

 private:
  bool ReadVarintSlow(uint64_t* value) {
    uint64_t result = 0;
    const char* p = p_;
    for (size_t i = 0; i < kMaxVarintBytes; ++i) {
      if (p >= end_) return FailAt("truncated varint", p_);
      const uint8_t byte = static_cast<uint8_t>(*p++);
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        p_ = p;
        *value = result;
        return true;
      }
    }
    return FailAt("varint longer than 10 bytes", p_);
  }

  const char* p_;
  const char* end_;
  const char* origin_;
  const char* error_ = nullptr;
  size_t error_offset_ = 0;
};

inline size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

inline void AppendVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

inline void AppendTag(std::string* out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

inline void AppendFixed32(std::string* out, uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  out->append(bytes, 4);
}

inline void AppendFixed64(std::string* out, uint64_t value) {
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out->append(bytes, 8);
}

// tag + length + payload.
inline void AppendBytesField(std::string* out, uint32_t field, std::string_view payload) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, payload.size());
  out->append(payload.data(), payload.size());
}

}  // namespace sluice::wire

#endif  // SLUICE_IO_PROTO_WIRE_H_
