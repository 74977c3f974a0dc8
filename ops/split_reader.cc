#include "sluice/ops/split_reader.h"

#include <map>
#include <mutex>

namespace sluice {
namespace {

struct FeedTable {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<SplitFeed>, std::less<>> feeds;
};

FeedTable& Feeds() {
  static FeedTable* table = new FeedTable;  // never destroyed: workers may
                                            // outlive static destruction order
  return *table;
}

}  // namespace

void RegisterSplitFeed(std::string id, std::shared_ptr<SplitFeed> feed) {
  FeedTable& table = Feeds();
  std::lock_guard<std::mutex> lock(table.mu);
  table.feeds[std::move(id)] = std::move(feed);
}

void UnregisterSplitFeed(const std::string& id) {
  FeedTable& table = Feeds();
  std::lock_guard<std::mutex> lock(table.mu);
  table.feeds.erase(id);
}

std::shared_ptr<SplitFeed> FindSplitFeed(const std::string& id) {
  FeedTable& table = Feeds();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.feeds.find(id);
  return it == table.feeds.end() ? nullptr : it->second;
}

}  // namespace sluice
