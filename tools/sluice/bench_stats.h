// Statistics of `sluice bench`: the summary of one side's repeated samples, and the ratio of two sides.
//
// Contract:
// - Summarize(samples): n, median, min, max and the quartiles (linear interpolation between closest ranks,
//   as numpy.percentile's default), so a reader sees the spread beside the median. No samples: all zero.
// - Percentile(sorted, q): q in [0, 1] of an ascending vector, the same interpolation; empty: 0.
// - Ratio(a, b): a / b of two medians, or nullopt when b is not positive (no meaningful ratio).
//
//   Summary s = Summarize({3.0, 1.0, 2.0});   // s.median == 2, s.min == 1, s.max == 3
#ifndef SLUICE_TOOLS_SLUICE_BENCH_STATS_H_
#define SLUICE_TOOLS_SLUICE_BENCH_STATS_H_

#include <cstddef>
#include <optional>
#include <vector>

namespace sluice::tools {

struct Summary {
  size_t n = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double q1 = 0;  // 25th percentile
  double q3 = 0;  // 75th percentile
};

double Percentile(const std::vector<double>& sorted, double q);
Summary Summarize(std::vector<double> samples);
std::optional<double> Ratio(double a, double b);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_STATS_H_
