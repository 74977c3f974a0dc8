// Chicago-taxi-shaped tf.train.Examples for the parser benchmarks: the 18 one-value features TFX's
// CsvExampleGen writes (int64, float and short bytes, ~500 bytes each), in key order as TFX writes them,
// with values varying by record so the branch predictor sees varied input.
#ifndef SLUICE_BENCHMARKS_IO_SYNTHETIC_TAXI_RECORDS_H_
#define SLUICE_BENCHMARKS_IO_SYNTHETIC_TAXI_RECORDS_H_

#include <string>
#include <vector>

#include "sluice/io/example.h"

namespace sluice::bench {

inline std::vector<std::string> SyntheticTaxiRecords(int count) {
  std::vector<std::string> records;
  records.reserve(static_cast<size_t>(count));
  for (int r = 0; r < count; ++r) {
    ExampleBuilder b;
    b.AddBytes("company", {r % 2 == 0 ? "Taxi Affiliation Services" : "Chicago Elite Cab Corp."});
    b.AddInt64s("dropoff_census_tract", {17031081500 + r});
    b.AddInt64s("dropoff_community_area", {8 + r % 70});
    b.AddFloats("dropoff_latitude", {41.89f + 0.001f * static_cast<float>(r)});
    b.AddFloats("dropoff_longitude", {-87.63f});
    b.AddFloats("fare", {12.25f + static_cast<float>(r)});
    b.AddBytes("payment_type", {r % 3 == 0 ? "Cash" : "Credit Card"});
    b.AddInt64s("pickup_census_tract", {17031839100 + r});
    b.AddInt64s("pickup_community_area", {28});
    b.AddFloats("pickup_latitude", {41.88f});
    b.AddFloats("pickup_longitude", {-87.64f});
    b.AddFloats("tips", {2.65f});
    b.AddFloats("trip_miles", {4.2f});
    b.AddInt64s("trip_seconds", {840 + r});
    b.AddInt64s("trip_start_day", {1 + r % 7});
    b.AddInt64s("trip_start_hour", {r % 24});
    b.AddInt64s("trip_start_month", {1 + r % 12});
    b.AddInt64s("trip_start_timestamp", {1420000000 + 3600 * r});
    records.push_back(b.Serialize());
  }
  return records;
}

}  // namespace sluice::bench

#endif  // SLUICE_BENCHMARKS_IO_SYNTHETIC_TAXI_RECORDS_H_
