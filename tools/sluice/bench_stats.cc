#include "tools/sluice/bench_stats.h"

#include <algorithm>
#include <cmath>

namespace sluice::tools {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = Percentile(samples, 0.5);
  s.q1 = Percentile(samples, 0.25);
  s.q3 = Percentile(samples, 0.75);
  return s;
}

std::optional<double> Ratio(double a, double b) {
  if (!(b > 0) || !std::isfinite(a) || !std::isfinite(b)) return std::nullopt;
  return a / b;
}

}  // namespace sluice::tools
