// The scenarios of `sluice bench`, one .cc each (bench_scan.cc, bench_pipeline.cc, ...); Scenarios()
// (bench_scenario.cc) lists them. What each measures is in its file's header and in docs/bench.md.
#ifndef SLUICE_TOOLS_SLUICE_BENCH_SCENARIOS_H_
#define SLUICE_TOOLS_SLUICE_BENCH_SCENARIOS_H_

#include "tools/sluice/bench_scenario.h"

namespace sluice::tools {

Scenario ScanScenario();
Scenario PipelineScenario();
Scenario OverheadScenario();
Scenario ParallelMapScenario();
Scenario FanoutScenario();
Scenario ServiceScenario();
Scenario CheckpointScenario();

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_SCENARIOS_H_
