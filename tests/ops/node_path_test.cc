// Node paths: formatting, parsing, look-up and the walk.
#include "sluice/ops/node_path.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/op_node.h"

namespace sluice {
namespace node_path_test_file {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(NodePathTest, FormatAndParse) {
  EXPECT_EQ(FormatNodePath({}), "/");
  EXPECT_EQ(FormatNodePath({0}), "/0");
  EXPECT_EQ(FormatNodePath({0, 2, 1}), "/0/2/1");
  EXPECT_EQ(ChildNodePath("/", 3), "/3");
  EXPECT_EQ(ChildNodePath("/0/2", 10), "/0/2/10");
  for (const std::vector<size_t>& indices :
       {std::vector<size_t>{}, std::vector<size_t>{0}, std::vector<size_t>{12, 0, 7}}) {
    absl::StatusOr<std::vector<size_t>> parsed = ParseNodePath(FormatNodePath(indices));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, indices);
  }
}

TEST(NodePathTest, MalformedPathsAreInvalidArgumentNamingThePath) {
  for (const char* bad : {"", "0", "0/1", "//", "/0/", "/0//1", "/a", "/-1", "/+1", "/01", "/1 ", " /1", "/1/2x",
                          "/99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<std::vector<size_t>> parsed = ParseNodePath(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(absl::StrCat("'", bad, "'")));
  }
}

// Zip(Range(5).Map(f), Range(3)).Batch(2): the root is Batch, /0 Zip, /0/0 Map, /0/0/0 its Range,
// /0/1 the second Range.
Dataset<std::pair<Tensor, Tensor>> Graph() {
  return Zip(Range(5).Map([](int64_t x) { return x; }), Range(3)).Batch(2);
}

TEST(NodePathTest, FindNodeByPath) {
  auto ds = Graph();
  const OpNode& root = *ds.node();
  absl::StatusOr<const OpNode*> found = FindNodeByPath(root, "/");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, &root);
  found = FindNodeByPath(root, "/0/0/0");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->op_name(), "Range");
  EXPECT_EQ(*found, root.inputs()[0]->inputs()[0]->inputs()[0].get());
  found = FindNodeByPath(root, "/0/1");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, root.inputs()[0]->inputs()[1].get());
}

TEST(NodePathTest, PathsLeavingTheGraphAreNotFoundNamingWhereTheyStopped) {
  auto ds = Graph();
  absl::StatusOr<const OpNode*> found = FindNodeByPath(*ds.node(), "/0/2");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(found.status().message()), HasSubstr("'/0/2'"));
  EXPECT_THAT(std::string(found.status().message()), HasSubstr("node /0 (Zip) has 2 input(s), no input 2"));
  found = FindNodeByPath(*ds.node(), "/0/0/0/0");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(std::string(found.status().message()), HasSubstr("node /0/0/0 (Range) has 0 input(s)"));
  EXPECT_EQ(FindNodeByPath(*ds.node(), "/x").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NodePathTest, WalkVisitsEveryPathDepthFirstAndCanStop) {
  auto ds = Graph();
  std::vector<std::pair<std::string, std::string>> seen;
  ForEachNodePath(*ds.node(), [&seen](const OpNode& node, const std::string& path) {
    seen.emplace_back(path, std::string(node.op_name()));
    return true;
  });
  EXPECT_THAT(seen, ElementsAre(Pair("/", "Batch"), Pair("/0", "Zip"), Pair("/0/0", "Map"), Pair("/0/0/0", "Range"),
                                Pair("/0/1", "Range")));
  for (const auto& [path, op] : seen) {
    absl::StatusOr<const OpNode*> node = FindNodeByPath(*ds.node(), path);
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ((*node)->op_name(), op);
  }
  std::vector<std::string> until_map;
  ForEachNodePath(*ds.node(), [&until_map](const OpNode& node, const std::string& path) {
    until_map.push_back(path);
    return node.op_name() != "Map";
  });
  EXPECT_THAT(until_map, ElementsAre("/", "/0", "/0/0"));
}

TEST(NodePathTest, ASharedInputHasOnePathPerWayToIt) {
  auto shared = Range(4);
  auto ds = Zip(shared, shared);
  std::vector<std::string> ranges;
  ForEachNodePath(*ds.node(), [&ranges, &shared](const OpNode& node, const std::string& path) {
    if (&node == shared.node().get()) ranges.push_back(path);
    return true;
  });
  EXPECT_THAT(ranges, ElementsAre("/0", "/1"));
}

TEST(NodePathTest, DeepChainsAreWalkedToTheLeaf) {
  auto ds = Range(1);
  for (int i = 0; i < 2000; ++i) ds = ds.Take(1);
  int64_t nodes = 0;
  std::string deepest;
  ForEachNodePath(*ds.node(), [&](const OpNode&, const std::string& path) {
    ++nodes;
    deepest = path;
    return true;
  });
  EXPECT_EQ(nodes, 2001);
  EXPECT_EQ(deepest.size(), 2u * 2000);
  absl::StatusOr<const OpNode*> leaf = FindNodeByPath(*ds.node(), deepest);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ((*leaf)->op_name(), "Range");
}

}  // namespace
}  // namespace node_path_test_file
}  // namespace sluice
