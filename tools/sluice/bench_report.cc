#include "tools/sluice/bench_report.h"

#include <sys/utsname.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sluice/version.h"
#include "tools/sluice/bench_json.h"
#include "tools/sluice/bench_stats.h"

namespace sluice::tools {
namespace {

std::string Num(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if (a >= 1e6) return absl::StrFormat("%.3g", v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  return absl::StrFormat("%.3f", v);
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(in >> a >> b >> c)) return "";
  return absl::StrFormat("%.2f %.2f %.2f", a, b, c);
}

std::string Kernel() {
  utsname u{};
  if (::uname(&u) != 0) return "";
  return absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
}

}  // namespace

std::optional<double> CaseRatio(const CaseResult& c, size_t baseline) {
  if (c.sides.empty() || baseline >= c.sides.size()) return std::nullopt;
  const double sluice = Summarize(c.sides[0].samples).median;
  const double other = Summarize(c.sides[baseline].samples).median;
  return c.higher_is_better ? Ratio(sluice, other) : Ratio(other, sluice);
}

std::string MachineLine() {
  return absl::StrCat(UtcNow(), ", ", std::thread::hardware_concurrency(), " cores, load average ",
                      LoadAverage(), ", ", Kernel());
}

void PrintTable(const ScenarioResult& result, std::ostream& out) {
  out << result.scenario;
  std::vector<std::string> params;
  for (const auto& [k, v] : result.parameters) params.push_back(absl::StrCat(k, "=", v));
  if (!params.empty()) out << " (" << absl::StrJoin(params, ", ") << ")";
  out << "\n";
  out << absl::StrFormat("  %-26s %-13s %-11s %10s %10s %10s %8s  %s\n", "case", "metric", "side", "median",
                         "min", "max", "ratio", "also (medians)");
  for (const CaseResult& c : result.cases) {
    for (size_t i = 0; i < c.sides.size(); ++i) {
      const SideResult& side = c.sides[i];
      const Summary s = Summarize(side.samples);
      std::string ratio;
      if (i > 0) {
        std::optional<double> r = CaseRatio(c, i);
        ratio = r ? absl::StrFormat("%.2fx", *r) : "-";
      }
      std::vector<std::string> extras;
      for (const auto& [key, values] : side.extra) {
        extras.push_back(absl::StrCat(key, "=", Num(Summarize(values).median)));
      }
      out << absl::StrFormat("  %-26s %-13s %-11s %10s %10s %10s %8s  %s\n", i == 0 ? c.name : "",
                             i == 0 ? c.metric : "", side.name, Num(s.median), Num(s.min), Num(s.max), ratio,
                             absl::StrJoin(extras, " "));
    }
    if (!c.note.empty()) out << "  " << std::string(26, ' ') << " note: " << c.note << "\n";
  }
  const bool any_lower = std::any_of(result.cases.begin(), result.cases.end(),
                                     [](const CaseResult& c) { return !c.higher_is_better; });
  out << "  ratio: sluice / baseline of the medians"
      << (any_lower ? " (for time per element: baseline / sluice)" : "")
      << "; above 1 means sluice is faster\n";
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
}

std::string BenchJson(const std::vector<ScenarioResult>& results) {
  std::string json = absl::StrCat(
      "{\"tool\":\"sluice bench\",\"version\":", JsonString(SLUICE_VERSION_STRING),
      ",\"date\":", JsonString(UtcNow()), ",\"machine\":{\"cores\":", std::thread::hardware_concurrency(),
      ",\"load_average\":", JsonString(LoadAverage()), ",\"kernel\":", JsonString(Kernel()),
      "},\"scenarios\":[");
  for (size_t r = 0; r < results.size(); ++r) {
    const ScenarioResult& result = results[r];
    if (r > 0) json += ",";
    absl::StrAppend(&json, "{\"scenario\":", JsonString(result.scenario), ",\"parameters\":{");
    for (size_t i = 0; i < result.parameters.size(); ++i) {
      absl::StrAppend(&json, i > 0 ? "," : "", JsonString(result.parameters[i].first), ":",
                      JsonString(result.parameters[i].second));
    }
    json += "},\"notes\":[";
    for (size_t i = 0; i < result.notes.size(); ++i) {
      absl::StrAppend(&json, i > 0 ? "," : "", JsonString(result.notes[i]));
    }
    json += "],\"cases\":[";
    for (size_t ci = 0; ci < result.cases.size(); ++ci) {
      const CaseResult& c = result.cases[ci];
      absl::StrAppend(&json, ci > 0 ? "," : "", "{\"name\":", JsonString(c.name),
                      ",\"metric\":", JsonString(c.metric),
                      ",\"higher_is_better\":", c.higher_is_better ? "true" : "false",
                      ",\"x_label\":", JsonString(c.x_label), ",\"x\":", JsonNumber(c.x),
                      ",\"note\":", JsonString(c.note), ",\"sides\":[");
      for (size_t si = 0; si < c.sides.size(); ++si) {
        const SideResult& side = c.sides[si];
        const Summary s = Summarize(side.samples);
        absl::StrAppend(&json, si > 0 ? "," : "", "{\"name\":", JsonString(side.name),
                        ",\"samples\":", JsonNumbers(side.samples), ",\"median\":", JsonNumber(s.median),
                        ",\"min\":", JsonNumber(s.min), ",\"max\":", JsonNumber(s.max),
                        ",\"q1\":", JsonNumber(s.q1), ",\"q3\":", JsonNumber(s.q3), ",\"extra\":{");
        bool first = true;
        for (const auto& [key, values] : side.extra) {
          absl::StrAppend(&json, first ? "" : ",", JsonString(key), ":{\"samples\":", JsonNumbers(values),
                          ",\"median\":", JsonNumber(Summarize(values).median), "}");
          first = false;
        }
        json += "}}";
      }
      json += "],\"ratios\":{";
      for (size_t si = 1; si < c.sides.size(); ++si) {
        std::optional<double> ratio = CaseRatio(c, si);
        absl::StrAppend(&json, si > 1 ? "," : "", JsonString(c.sides[si].name), ":",
                        ratio ? JsonNumber(*ratio) : "null");
      }
      json += "}}";
    }
    json += "]}";
  }
  json += "]}\n";
  return json;
}

}  // namespace sluice::tools
