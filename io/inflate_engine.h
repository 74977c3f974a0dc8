// InflateEngine: one decoder library (zlib, or Intel ISA-L's igzip) behind Inflater (io/zlib_stream.h).
// Inflater keeps what must not depend on the library: where streams and gzip members begin and end,
// offsets, error messages and handing out the output decoded before an error. An engine only decodes.
//
// Contract:
//   - Init() once before the first Step(); it allocates the decoder's state, so running out of memory
//     is a Status rather than an exception.
//   - Step(in, out) decodes from `in` into `out` until one of them runs out, the stream (or gzip member)
//     ends, or the data is bad. It reports what it used and wrote; bytes it took into a bit buffer but
//     has not decoded yet are counted in `used` and named in `unread` (so that an error's offset can
//     point at the damage rather than past it).
//   - Reset() prepares the next stream after kStreamEnd (the next gzip member).
//   - Formats: kGzip, kZlib, kAuto, kRawDeflate for zlib; kGzip and kZlib for ISA-L.
//   - One thread at a time.
#ifndef SLUICE_IO_INFLATE_ENGINE_H_
#define SLUICE_IO_INFLATE_ENGINE_H_

#include <cstddef>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice::io {

enum class ZlibFormat { kGzip, kZlib, kAuto, kRawDeflate };

enum class InflateOutcome {
  kProgress,    // used or wrote something (or needs more input / output space)
  kStreamEnd,   // the stream or gzip member ended; its trailer checked
  kNoProgress,  // input and output space available, yet nothing moved: the data is bad
  kNeedDict,    // a zlib stream that needs a preset dictionary
  kOutOfMemory,
  kCorrupt,  // bad data; `detail` says what, `back` how far before the input used so far it begins
};

struct InflateStep {
  size_t used = 0;
  size_t produced = 0;
  size_t unread = 0;
  InflateOutcome outcome = InflateOutcome::kProgress;
  absl::string_view detail;  // static text, for kCorrupt
  size_t back = 0;           // for kCorrupt: the bad field starts this many bytes before the input used
  bool trailer = false;      // for kCorrupt: the stream's checksum or length trailer disagrees
};

class InflateEngine {
 public:
  virtual ~InflateEngine() = default;
  virtual absl::Status Init() = 0;
  virtual InflateStep Step(std::span<const std::byte> in, std::span<std::byte> out) = 0;
  virtual void Reset() = 0;
};

// Whether this build of sluice can decode with ISA-L (SLUICE_HAVE_ISAL).
bool IsalInflateAvailable();

std::unique_ptr<InflateEngine> MakeZlibInflateEngine(ZlibFormat format);
// nullptr when sluice was built without ISA-L or for formats it does not take (kAuto, kRawDeflate).
std::unique_ptr<InflateEngine> MakeIsalInflateEngine(ZlibFormat format);

}  // namespace sluice::io

#endif  // SLUICE_IO_INFLATE_ENGINE_H_
