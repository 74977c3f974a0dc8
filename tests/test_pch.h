// The headers most test files include, compiled once per build into a precompiled header that every
// test binary reuses (CMakeLists.txt, SLUICE_TEST_PCH). Parsing them was about a third of a typical
// test file's compile time. Test files still include what they use; this list only decides what is
// parsed once.
#ifndef SLUICE_TESTS_TEST_PCH_H_
#define SLUICE_TESTS_TEST_PCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/distribute.h"
#include "sluice/engine/sync_wait.h"
#include "sluice/engine/task.h"
#include "sluice/engine/thread_pool.h"
#include "sluice/io/example.h"
#include "sluice/io/tensor.h"
#include "sluice/ops/dataset.h"
#include "tests/test_util.h"

#endif  // SLUICE_TESTS_TEST_PCH_H_
