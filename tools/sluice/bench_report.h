// How `sluice bench` shows its results: a compact table for the terminal, and JSON with every raw sample.
//
// Table: per case, one row per side: median, min, max of its runs, its other figures' medians, and for a
// baseline the ratio sluice / baseline (above 1: sluice is faster, when higher is better; for a metric
// where lower is better, a time such as ns/element or us, the ratio printed is baseline / sluice so that
// above 1 still means sluice is better, and the footer says so).
//
// JSON: {"tool": "sluice bench", "version", "date" (UTC, ISO 8601), "machine": {"cores", "load_average",
// "kernel"}, "scenarios": [{"scenario", "parameters": {...}, "notes": [...], "cases": [{"name", "metric",
// "higher_is_better", "x_label", "x", "note", "sides": [{"name", "samples": [...], "median", "min", "max",
// "q1", "q3", "extra": {NAME: {"samples", "median"}}}], "ratios": {BASELINE: number|null}}]}]}.
// Non-finite numbers are written as null. Indented by one space per level, so a diff of two runs reads.
#ifndef SLUICE_TOOLS_SLUICE_BENCH_REPORT_H_
#define SLUICE_TOOLS_SLUICE_BENCH_REPORT_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/sluice/bench_scenario.h"

namespace sluice::tools {

// sluice's median over the baseline's (or the inverse when lower is better; see above).
std::optional<double> CaseRatio(const CaseResult& c, size_t baseline);

void PrintTable(const ScenarioResult& result, std::ostream& out);

// The whole JSON document for the scenarios run.
std::string BenchJson(const std::vector<ScenarioResult>& results);

// One line saying where this ran: date, cores, load average, kernel.
std::string MachineLine();

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_REPORT_H_
