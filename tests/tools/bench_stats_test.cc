// `sluice bench`'s statistics, alternating runner and report, on known inputs.
#include "tools/sluice/bench_stats.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tools/sluice/bench_report.h"
#include "tools/sluice/bench_scenario.h"

namespace sluice::tools {
namespace bench_stats_test_file {
namespace {

TEST(BenchStatsTest, MedianMinMaxOfOddAndEvenCounts) {
  Summary odd = Summarize({3.0, 1.0, 2.0});
  EXPECT_EQ(odd.n, 3u);
  EXPECT_DOUBLE_EQ(odd.median, 2.0);
  EXPECT_DOUBLE_EQ(odd.min, 1.0);
  EXPECT_DOUBLE_EQ(odd.max, 3.0);
  Summary even = Summarize({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  // numpy.percentile([1, 2, 3, 4], [25, 75]) == [1.75, 3.25]
  EXPECT_DOUBLE_EQ(even.q1, 1.75);
  EXPECT_DOUBLE_EQ(even.q3, 3.25);
  Summary one = Summarize({7.0});
  EXPECT_DOUBLE_EQ(one.median, 7.0);
  EXPECT_DOUBLE_EQ(one.q1, 7.0);
  EXPECT_DOUBLE_EQ(one.q3, 7.0);
  Summary none = Summarize({});
  EXPECT_EQ(none.n, 0u);
  EXPECT_DOUBLE_EQ(none.median, 0.0);
}

TEST(BenchStatsTest, PercentileInterpolatesAndClamps) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(sorted, 0.0), 10);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 1.0), 50);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 0.99), 49.6);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 0.1), 14);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 2.0), 50);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
}

TEST(BenchStatsTest, RatioNeedsAPositiveFiniteDenominator) {
  EXPECT_EQ(Ratio(6, 3), 2.0);
  EXPECT_FALSE(Ratio(6, 0).has_value());
  EXPECT_FALSE(Ratio(6, -1).has_value());
  EXPECT_FALSE(Ratio(std::nan(""), 2).has_value());
  EXPECT_FALSE(Ratio(1, std::numeric_limits<double>::infinity()).has_value());
}

CaseResult TwoSides(bool higher_is_better) {
  CaseResult c;
  c.name = "case";
  c.metric = higher_is_better ? "GB/s" : "ns/element";
  c.higher_is_better = higher_is_better;
  c.sides.resize(2);
  c.sides[0].name = "sluice";
  c.sides[0].samples = {4, 100, 4.2};  // median 4.2: one outlier does not move it
  c.sides[1].name = "dd";
  c.sides[1].samples = {2.1, 2, 1};
  return c;
}

TEST(BenchStatsTest, CaseRatioIsSluiceOverBaselineOrInvertedWhenLowerIsBetter) {
  EXPECT_DOUBLE_EQ(*CaseRatio(TwoSides(true), 1), 2.1);
  EXPECT_DOUBLE_EQ(*CaseRatio(TwoSides(false), 1), 2.0 / 4.2);
  EXPECT_FALSE(CaseRatio(TwoSides(true), 2).has_value());
}

TEST(BenchStatsTest, RunAlternatingRotatesTheFirstSideEachRound) {
  BenchConfig config;
  config.repeat = 3;
  std::string order;
  auto side = [&order](char name, double value) {
    return [&order, name, value]() -> absl::StatusOr<Sample> {
      order += name;
      Sample s;
      s.value = value;
      s.extra["x"] = value * 2;
      return s;
    };
  };
  CaseResult c;
  c.name = "rotation";
  ASSERT_TRUE(
      RunAlternating(config, {{"a", side('a', 1)}, {"b", side('b', 2)}, {"c", side('c', 3)}}, &c).ok());
  EXPECT_EQ(order, "abcbcacab");
  ASSERT_EQ(c.sides.size(), 3u);
  EXPECT_EQ(c.sides[1].name, "b");
  EXPECT_EQ(c.sides[1].samples, (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(c.sides[2].extra.at("x"), (std::vector<double>{6, 6, 6}));
}

TEST(BenchStatsTest, RunAlternatingStopsAtAFailureNamingCaseAndSide) {
  BenchConfig config;
  config.repeat = 2;
  CaseResult c;
  c.name = "rec1k";
  absl::Status s =
      RunAlternating(config,
                     {{"sluice", [] { return absl::StatusOr<Sample>(Sample{}); }},
                      {"fio", [] { return absl::StatusOr<Sample>(absl::InternalError("fio exited 1")); }}},
                     &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("rec1k, fio: fio exited 1"), std::string::npos) << s;
  config.repeat = 0;
  EXPECT_EQ(RunAlternating(config, {}, &c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(BenchStatsTest, TableAndJsonShowMediansRatiosAndEverySample) {
  ScenarioResult r;
  r.scenario = "demo";
  r.parameters.emplace_back("size", "1 \"MiB\"");
  r.cases.push_back(TwoSides(true));
  r.cases.back().sides[1].extra["peak_rss_MiB"] = {std::nan(""), 5};
  r.notes.push_back("O_DIRECT not measured");
  std::ostringstream table;
  PrintTable(r, table);
  EXPECT_NE(table.str().find("2.10x"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("4.200"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("note: O_DIRECT not measured"), std::string::npos) << table.str();

  const nlohmann::json doc = nlohmann::json::parse(BenchJson({r}), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << BenchJson({r});
  EXPECT_EQ(doc["tool"], "sluice bench");
  ASSERT_EQ(doc["scenarios"].size(), 1u);
  const nlohmann::json& scenario = doc["scenarios"][0];
  EXPECT_EQ(scenario["parameters"]["size"], "1 \"MiB\"");
  EXPECT_EQ(scenario["notes"][0], "O_DIRECT not measured");
  const nlohmann::json& c = scenario["cases"][0];
  EXPECT_EQ(c["sides"][0]["name"], "sluice");
  EXPECT_EQ(c["sides"][0]["samples"], nlohmann::json({4, 100, 4.2}));
  EXPECT_DOUBLE_EQ(c["sides"][0]["median"].get<double>(), 4.2);
  EXPECT_DOUBLE_EQ(c["sides"][0]["max"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(c["ratios"]["dd"].get<double>(), 2.1);
  // A NaN sample is null, and the document still parses.
  EXPECT_TRUE(c["sides"][1]["extra"]["peak_rss_MiB"]["samples"][0].is_null());
  EXPECT_EQ(c["sides"][1]["extra"]["peak_rss_MiB"]["samples"][1], 5);
}

}  // namespace
}  // namespace bench_stats_test_file
}  // namespace sluice::tools
