// zlib behind Inflater: every format, and the fallback when sluice is built without ISA-L.
#include <zlib.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "io/inflate_engine.h"

namespace sluice::io {
namespace {

int ZlibWindowBits(ZlibFormat format) {
  switch (format) {
    case ZlibFormat::kGzip:
      return MAX_WBITS + 16;
    case ZlibFormat::kZlib:
      return MAX_WBITS;
    case ZlibFormat::kAuto:
      return MAX_WBITS + 32;
    case ZlibFormat::kRawDeflate:
      return -MAX_WBITS;
  }
  return MAX_WBITS;
}

class ZlibInflateEngine final : public InflateEngine {
 public:
  explicit ZlibInflateEngine(ZlibFormat format) : format_(format) {}
  ~ZlibInflateEngine() override {
    if (initialized_) inflateEnd(&stream_);
  }

  absl::Status Init() override {
    const int rc = inflateInit2(&stream_, ZlibWindowBits(format_));
    if (rc == Z_MEM_ERROR) return absl::ResourceExhaustedError("out of memory in inflateInit");
    if (rc != Z_OK) return absl::InternalError(absl::StrCat("inflateInit2 failed: ", rc));
    initialized_ = true;
    return absl::OkStatus();
  }

  // The caller keeps both spans within zlib's uInt counts.
  InflateStep Step(std::span<const std::byte> in, std::span<std::byte> out) override {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    stream_.avail_in = static_cast<uInt>(in.size());
    stream_.next_out = reinterpret_cast<Bytef*>(out.data());
    stream_.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    InflateStep step;
    step.used = in.size() - stream_.avail_in;
    step.produced = out.size() - stream_.avail_out;
    switch (rc) {
      case Z_STREAM_END:
        step.outcome = InflateOutcome::kStreamEnd;
        break;
      case Z_OK:
        break;
      case Z_BUF_ERROR:
        if (step.used == 0 && step.produced == 0 && !in.empty() && !out.empty()) {
          step.outcome = InflateOutcome::kNoProgress;
        }
        break;
      case Z_NEED_DICT:
        step.outcome = InflateOutcome::kNeedDict;
        break;
      case Z_MEM_ERROR:
        step.outcome = InflateOutcome::kOutOfMemory;
        break;
      default: {
        step.outcome = InflateOutcome::kCorrupt;
        step.detail = stream_.msg != nullptr ? stream_.msg : "unknown zlib error";
        // zlib has just read the 4-byte trailer field that disagrees with the data.
        if (step.detail == "incorrect data check" || step.detail == "incorrect length check") {
          step.trailer = true;
          step.back = 4;
        }
        break;
      }
    }
    return step;
  }

  void Reset() override { inflateReset(&stream_); }

 private:
  ZlibFormat format_;
  z_stream stream_{};  // the engine is heap-held by Inflater, so zlib's back pointer stays valid
  bool initialized_ = false;
};

}  // namespace

std::unique_ptr<InflateEngine> MakeZlibInflateEngine(ZlibFormat format) {
  return std::make_unique<ZlibInflateEngine>(format);
}

}  // namespace sluice::io
