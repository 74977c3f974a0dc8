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
#include "nlohmann/json.hpp"
#include "sluice/version.h"
#include "tools/sluice/bench_stats.h"

namespace sluice::tools {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

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
  out << absl::StrFormat("  %-26s %-13s %-11s %10s %10s %10s %9s  %s\n", "case", "metric", "side", "median",
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
      out << absl::StrFormat("  %-26s %-13s %-11s %10s %10s %10s %9s  %s\n", i == 0 ? c.name : "",
                             i == 0 ? c.metric : "", side.name, Num(s.median), Num(s.min), Num(s.max), ratio,
                             absl::StrJoin(extras, " "));
    }
    if (!c.note.empty()) out << "  " << std::string(26, ' ') << " note: " << c.note << "\n";
  }
  const bool any_lower = std::any_of(result.cases.begin(), result.cases.end(),
                                     [](const CaseResult& c) { return !c.higher_is_better; });
  out << "  ratio: sluice / baseline of the medians" << (any_lower ? " (for times: baseline / sluice)" : "")
      << "; above 1 means sluice is faster\n";
  for (const std::string& note : result.notes) out << "  note: " << note << "\n";
}

std::string BenchJson(const std::vector<ScenarioResult>& results) {
  // nlohmann writes NaN and infinities as null, which JSON readers accept.
  Json doc = {{"tool", "sluice bench"},
              {"version", SLUICE_VERSION_STRING},
              {"date", UtcNow()},
              {"machine",
               {{"cores", std::thread::hardware_concurrency()},
                {"load_average", LoadAverage()},
                {"kernel", Kernel()}}},
              {"scenarios", Json::array()}};
  for (const ScenarioResult& result : results) {
    Json parameters = Json::object();
    for (const auto& [key, value] : result.parameters) parameters[key] = value;
    Json cases = Json::array();
    for (const CaseResult& c : result.cases) {
      Json sides = Json::array();
      for (const SideResult& side : c.sides) {
        const Summary s = Summarize(side.samples);
        Json extra = Json::object();
        for (const auto& [key, values] : side.extra) {
          extra[key] = {{"samples", values}, {"median", Summarize(values).median}};
        }
        sides.push_back({{"name", side.name},
                         {"samples", side.samples},
                         {"median", s.median},
                         {"min", s.min},
                         {"max", s.max},
                         {"q1", s.q1},
                         {"q3", s.q3},
                         {"extra", extra}});
      }
      Json ratios = Json::object();
      for (size_t i = 1; i < c.sides.size(); ++i) {
        std::optional<double> ratio = CaseRatio(c, i);
        ratios[c.sides[i].name] = ratio ? Json(*ratio) : Json(nullptr);
      }
      cases.push_back({{"name", c.name},
                       {"metric", c.metric},
                       {"higher_is_better", c.higher_is_better},
                       {"x_label", c.x_label},
                       {"x", c.x},
                       {"note", c.note},
                       {"sides", sides},
                       {"ratios", ratios}});
    }
    doc["scenarios"].push_back({{"scenario", result.scenario},
                                {"parameters", parameters},
                                {"notes", result.notes},
                                {"cases", cases}});
  }
  return doc.dump(1) + "\n";
}

}  // namespace sluice::tools
