// Logging: where the library's few messages go, and which of them are worth showing.
//
// Contract:
// - The library prints nothing unless asked. Failures reach callers as absl::Status values, never as log
//   lines; the log carries only what no Status can: a fallback taken on the caller's behalf, the I/O
//   backend chosen, an error inside a background loop, errors IgnoreErrors(log_warning=true) drops.
// - Levels, lowest first: kDebug, kInfo, kWarning, kError. A message is delivered when its level is at or
//   above the threshold; kOff as threshold silences everything (kOff is never a message's level).
// - Threshold: SetLogLevel(), else the environment variable SLUICE_LOG_LEVEL (debug, info, warning, error
//   or off; any case), read once on first use; unset means kWarning, so nothing routine prints. An invalid
//   value also means kWarning, and says so once through the sink at warning level.
// - Sink: SetLogSink() installs a function that receives (level, message) and returns the previous one;
//   an empty sink restores the default, which writes the line "sluice: <level>: <message>" to stderr.
//   Messages are one line, without the "sluice: " prefix or a trailing newline.
// - Threading: any thread may log, set the level or swap the sink at any time. Sink calls are serialised
//   under one mutex, so a sink is never called concurrently with itself or another sink, and once
//   SetLogSink returns, the previous sink is not running and will never be called again (it may be
//   destroyed). The sink must not throw (Log is noexcept) and must not call back into this API (it
//   would deadlock on that mutex).
// - Cost: a disabled message costs one relaxed atomic load, provided the caller tests LogEnabled()
//   before formatting (Log itself checks too, but by then the message has been built).
// - Crashes: a programming error that aborts the process (a Tensor read as the wrong type, a reader
//   destroyed on the reactor thread) writes its reason straight to stderr whatever the level and sink,
//   so that an abort always says why.
//
//   // Route sluice's messages into the application's own logging, debug and up:
//   sluice::SetLogLevel(sluice::LogLevel::kDebug);
//   sluice::SetLogSink([](sluice::LogLevel level, std::string_view message) {
//     my_logger.Write(sluice::LogLevelName(level), message);
//   });
//
//   // Inside the library: format only when someone listens.
//   if (LogEnabled(LogLevel::kInfo)) Log(LogLevel::kInfo, absl::StrCat("opened ", path));
#ifndef SLUICE_ENGINE_LOG_H_
#define SLUICE_ENGINE_LOG_H_

#include <atomic>
#include <functional>
#include <string_view>

#include "absl/status/statusor.h"
#include "sluice/export.h"

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarning, kError, kOff };

// Receives each delivered message; see the contract above for threading.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Installs `sink` (empty: the default stderr sink) and returns the previous sink (empty if it was the default).
SLUICE_EXPORT LogSink SetLogSink(LogSink sink);

// The threshold: messages below `level` are dropped. Overrides SLUICE_LOG_LEVEL.
SLUICE_EXPORT void SetLogLevel(LogLevel level);
SLUICE_EXPORT LogLevel GetLogLevel();

// "debug", "info", "warning", "error" or "off", in any case; InvalidArgument otherwise.
SLUICE_EXPORT absl::StatusOr<LogLevel> ParseLogLevel(std::string_view text);

// The lower-case name ParseLogLevel accepts.
SLUICE_EXPORT std::string_view LogLevelName(LogLevel level);

namespace detail {

// The threshold as an int, or kLogLevelUnread until SLUICE_LOG_LEVEL has been read.
inline constexpr int kLogLevelUnread = -1;
SLUICE_EXPORT extern std::atomic<int> log_threshold;
// Reads SLUICE_LOG_LEVEL (once per process) and returns the threshold.
SLUICE_EXPORT int InitLogThreshold() noexcept;

}  // namespace detail

// Whether a message at `level` would be delivered. One relaxed atomic load once the threshold is known.
inline bool LogEnabled(LogLevel level) noexcept {
  int threshold = detail::log_threshold.load(std::memory_order_relaxed);
  if (threshold == detail::kLogLevelUnread) [[unlikely]] threshold = detail::InitLogThreshold();
  return level != LogLevel::kOff && static_cast<int>(level) >= threshold;
}

// Delivers `message` to the sink when LogEnabled(level).
SLUICE_EXPORT void Log(LogLevel level, std::string_view message) noexcept;

}  // namespace sluice

#endif  // SLUICE_ENGINE_LOG_H_
