// Intel ISA-L's igzip behind Inflater for GZIP and ZLIB: about twice zlib's inflate rate here
// (benchmarks/io/crc32c_benchmark.cc, BM_GzipInflate). Built when CMake finds libisal (SLUICE_WITH_ISAL).
//
// Where ISA-L reports less than zlib, this file recovers zlib's wording, so that both libraries give the
// same errors: a gzip member must start with the magic bytes (ISA-L would wait for a whole header first);
// a bad trailer names the field (ISA-L says only "checksum"), found by comparing the stored CRC-32 with
// the one ISA-L computed.
#include <memory>

#include "io/inflate_engine.h"

#if SLUICE_HAVE_ISAL
#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#endif

namespace sluice::io {

#if SLUICE_HAVE_ISAL
namespace {

constexpr unsigned char kGzipMagic[2] = {0x1f, 0x8b};

uint32_t LoadLittleEndian32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

class IsalInflateEngine final : public InflateEngine {
 public:
  explicit IsalInflateEngine(ZlibFormat format) : gzip_(format == ZlibFormat::kGzip) {}

  absl::Status Init() override {
    // ~40 KB of tables and history: allocated here so that running out of memory is a Status.
    state_.reset(new (std::nothrow) inflate_state());  // zeroed: isal_inflate_init leaves some fields
    if (state_ == nullptr) return absl::ResourceExhaustedError("out of memory for the ISA-L inflate state");
    Reset();
    return absl::OkStatus();
  }

  InflateStep Step(std::span<const std::byte> in, std::span<std::byte> out) override {
    InflateStep step;
    if (gzip_ && magic_seen_ < 2) {
      // As zlib does: read both magic bytes, then judge them.
      const size_t n = std::min(in.size(), 2 - magic_seen_);
      for (size_t i = 0; i < n; ++i) {
        bad_magic_ = bad_magic_ || static_cast<unsigned char>(in[i]) != kGzipMagic[magic_seen_ + i];
      }
      if (bad_magic_) {
        magic_seen_ += n;
        step.used = n;
        if (magic_seen_ == 2) {
          step.outcome = InflateOutcome::kCorrupt;
          step.detail = "incorrect header check";
        }
        return step;
      }
    }
    inflate_state& s = *state_;
    s.next_in = reinterpret_cast<uint8_t*>(const_cast<std::byte*>(in.data()));
    s.avail_in = static_cast<uint32_t>(in.size());
    s.next_out = reinterpret_cast<uint8_t*>(out.data());
    s.avail_out = static_cast<uint32_t>(out.size());
    const int rc = isal_inflate(&s);
    // After some errors (an invalid distance met in its fast loop) ISA-L leaves avail_in above what it
    // was given (it counts look-ahead as owed): all of the input counts as used then.
    step.used = s.avail_in <= in.size() ? in.size() - s.avail_in : in.size();
    step.produced = s.avail_out <= out.size() ? out.size() - s.avail_out : out.size();
    step.unread = static_cast<size_t>(s.read_in_length > 0 ? s.read_in_length / 8 : 0);
    KeepTail(in.first(step.used));
    if (magic_seen_ < 2) magic_seen_ = std::min<size_t>(2, magic_seen_ + step.used);
    switch (rc) {
      case ISAL_DECOMP_OK:
      case ISAL_END_INPUT:
      case ISAL_OUT_OVERFLOW:
        if (s.block_state == ISAL_BLOCK_FINISH) {
          step.outcome = InflateOutcome::kStreamEnd;
          // Whole bytes still in the bit buffer belong to what follows the stream: give them back.
          const size_t give_back = std::min(step.unread, step.used);
          step.used -= give_back;
          step.unread = 0;
        } else if (step.used == 0 && step.produced == 0 && !in.empty() && !out.empty()) {
          step.outcome = InflateOutcome::kNoProgress;
        }
        break;
      case ISAL_NEED_DICT:
        step.outcome = InflateOutcome::kNeedDict;
        break;
      case ISAL_INCORRECT_CHECKSUM:
        step.outcome = InflateOutcome::kCorrupt;
        if (s.block_state == ISAL_BLOCK_FINISH || s.block_state == ISAL_CHECKSUM_CHECK) {
          NameTheBadTrailerField(step);
        } else {
          step.detail = "header crc mismatch";
          step.back = step.unread;
        }
        break;
      default:
        step.outcome = InflateOutcome::kCorrupt;
        step.detail = ErrorText(rc);
        step.back = step.unread;
        break;
    }
    return step;
  }

  void Reset() override {
    isal_inflate_init(state_.get());
    state_->crc_flag = gzip_ ? ISAL_GZIP : ISAL_ZLIB;
    magic_seen_ = 0;
    bad_magic_ = false;
    tail_size_ = 0;
  }

 private:
  static absl::string_view ErrorText(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK:
        return "invalid block type or block header";
      case ISAL_INVALID_SYMBOL:
        return "invalid literal/length or distance code";
      case ISAL_INVALID_LOOKBACK:
        return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER:
        return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD:
        return "unknown compression method";
      default:
        return "unknown ISA-L inflate error";
    }
  }

  // The last bytes consumed, enough for a gzip trailer (CRC-32, ISIZE) and the bit buffer's bytes.
  void KeepTail(std::span<const std::byte> used) {
    const size_t keep = std::min(used.size(), sizeof(tail_));
    const size_t shift = std::min(tail_size_, sizeof(tail_) - keep);
    std::memmove(tail_, tail_ + tail_size_ - shift, shift);
    std::memcpy(tail_ + shift, used.data() + used.size() - keep, keep);
    tail_size_ = shift + keep;
  }

  // ISA-L reports a bad trailer as one "checksum" error; zlib names the field, and so does this.
  void NameTheBadTrailerField(InflateStep& step) const {
    step.trailer = true;
    step.detail = "incorrect data check";
    if (!gzip_) {
      step.back = 4 + step.unread;  // ZLIB: a 4-byte Adler-32
      return;
    }
    step.back = 8 + step.unread;  // GZIP: CRC-32, then the length (ISIZE)
    if (tail_size_ >= 8 + step.unread) {
      const unsigned char* trailer = tail_ + tail_size_ - step.unread - 8;
      if (LoadLittleEndian32(trailer) == state_->crc) {
        step.detail = "incorrect length check";
        step.back = 4 + step.unread;
      }
    }
  }

  bool gzip_;
  std::unique_ptr<inflate_state> state_;
  size_t magic_seen_ = 0;  // gzip magic bytes of this member checked so far
  bool bad_magic_ = false;
  unsigned char tail_[16] = {};
  size_t tail_size_ = 0;
};

}  // namespace

bool IsalInflateAvailable() { return true; }

std::unique_ptr<InflateEngine> MakeIsalInflateEngine(ZlibFormat format) {
  if (format != ZlibFormat::kGzip && format != ZlibFormat::kZlib) return nullptr;
  return std::make_unique<IsalInflateEngine>(format);
}

#else

bool IsalInflateAvailable() { return false; }

std::unique_ptr<InflateEngine> MakeIsalInflateEngine(ZlibFormat) { return nullptr; }

#endif

}  // namespace sluice::io
