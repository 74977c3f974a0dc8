#include "sluice/engine/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace detail {

// Relaxed everywhere: the threshold guards no other data, and a message racing a level change may go
// either way.
constinit std::atomic<int> log_threshold{kLogLevelUnread};

}  // namespace detail

namespace {

constexpr LogLevel kDefaultLevel = LogLevel::kWarning;

// This Abseil's string_view is its own type, not std::string_view.
absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Never destroyed: pool and reactor threads may still log while static destructors run at exit.
// std::mutex rather than absl::Mutex: TSan intercepts pthread mutexes, but not the uninstrumented
// Abseil the distribution ships, so it would report every sink swap as a race.
struct SinkState {
  std::mutex mu;
  LogSink sink;  // guarded by mu; empty: the default stderr sink
};

SinkState& State() {
  static SinkState* const state = new SinkState;
  return *state;
}

void WriteToStderr(LogLevel level, std::string_view message) {
  // One fwrite per line, so lines from other writers of stderr do not interleave with it mid-line.
  const std::string line = absl::StrCat("sluice: ", ToAbsl(LogLevelName(level)), ": ", ToAbsl(message), "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// Calls the sink without checking the threshold. Holding the mutex across the call is what makes a
// swapped-out sink safe to destroy as soon as SetLogSink returns.
void Deliver(LogLevel level, std::string_view message) {
  SinkState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.sink) {
    state.sink(level, message);
  } else {
    WriteToStderr(level, message);
  }
}

}  // namespace

namespace detail {

int InitLogThreshold() noexcept {
  // The static's guard makes concurrent first callers wait until the threshold is stored.
  static const bool initialised = [] {
    const char* value = std::getenv("SLUICE_LOG_LEVEL");
    LogLevel level = kDefaultLevel;
    std::string complaint;
    if (value != nullptr && *value != '\0') {
      absl::StatusOr<LogLevel> parsed = ParseLogLevel(value);
      if (parsed.ok()) {
        level = *parsed;
      } else {
        complaint = absl::StrCat("SLUICE_LOG_LEVEL='", value,
                                 "' is not a log level (expected debug, info, warning, error or off); using ",
                                 ToAbsl(LogLevelName(kDefaultLevel)));
      }
    }
    log_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
    // Delivered directly: going through LogEnabled here would re-enter this initialiser.
    if (!complaint.empty()) Deliver(LogLevel::kWarning, complaint);
    return true;
  }();
  (void)initialised;
  return log_threshold.load(std::memory_order_relaxed);
}

}  // namespace detail

LogSink SetLogSink(LogSink sink) {
  SinkState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mu);
    std::swap(state.sink, sink);
  }
  return sink;
}

void SetLogLevel(LogLevel level) {
  // Read the environment first, so a first use racing this call cannot overwrite the level set here.
  detail::InitLogThreshold();
  detail::log_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel GetLogLevel() {
  int threshold = detail::log_threshold.load(std::memory_order_relaxed);
  if (threshold == detail::kLogLevelUnread) threshold = detail::InitLogThreshold();
  return static_cast<LogLevel>(threshold);
}

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view text) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError, LogLevel::kOff}) {
    if (absl::EqualsIgnoreCase(ToAbsl(text), ToAbsl(LogLevelName(level)))) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", ToAbsl(text), "' is not a log level: expected debug, info, warning, error or off"));
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "unknown";
}

void Log(LogLevel level, std::string_view message) noexcept {
  if (LogEnabled(level)) Deliver(level, message);
}

}  // namespace sluice
