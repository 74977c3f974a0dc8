// The dispatcher's journal file: records come back in order, a torn last record is cut off, damage
// elsewhere is DataLoss naming the file and offset, and one dispatcher holds a folder at a time.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "distribute/service/journal.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace sluice::service {
namespace service_journal_test_file {
namespace {

struct Opened {
  absl::StatusOr<std::unique_ptr<Journal>> journal;
  std::vector<std::string> replay;
  std::string note;
};

Opened Open(const std::string& dir) {
  Opened opened{absl::UnknownError("not opened"), {}, {}};
  opened.journal = Journal::Open(dir, &opened.replay, &opened.note);
  return opened;
}

TEST(ServiceJournalTest, RecordsComeBackInOrderAndAppendsContinueAfterThem) {
  const std::string dir = testing_util::TempPath("journal_order");
  {
    Opened first = Open(dir);
    ASSERT_TRUE(first.journal.ok()) << first.journal.status();
    EXPECT_TRUE(first.replay.empty());
    for (const char* record : {"one", "", "three"}) ASSERT_TRUE((*first.journal)->Append(record).ok());
  }
  {
    Opened second = Open(dir);
    ASSERT_TRUE(second.journal.ok()) << second.journal.status();
    EXPECT_EQ(second.replay, (std::vector<std::string>{"one", "", "three"}));
    EXPECT_TRUE(second.note.empty());
    ASSERT_TRUE((*second.journal)->Append("four").ok());
  }
  EXPECT_EQ(Open(dir).replay, (std::vector<std::string>{"one", "", "three", "four"}));
}

TEST(ServiceJournalTest, ARecordCutOffByACrashIsDroppedAndTheFileContinuesWhole) {
  const std::string dir = testing_util::TempPath("journal_torn");
  {
    Opened first = Open(dir);
    ASSERT_TRUE(first.journal.ok());
    ASSERT_TRUE((*first.journal)->Append("kept").ok());
    ASSERT_TRUE((*first.journal)->Append("torn record").ok());
  }
  const std::string path = dir + "/journal";
  const auto whole = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, whole - 5);  // the last append stopped 5 bytes short
  {
    Opened second = Open(dir);
    ASSERT_TRUE(second.journal.ok()) << second.journal.status();
    EXPECT_EQ(second.replay, std::vector<std::string>{"kept"});
    EXPECT_NE(second.note.find("dropped an incomplete last record"), std::string::npos) << second.note;
    ASSERT_TRUE((*second.journal)->Append("after").ok());
  }
  EXPECT_EQ(Open(dir).replay, (std::vector<std::string>{"kept", "after"}));
  // Zeros after the last record (a file extended before its data reached the disk) end it the same way.
  {
    std::ofstream zeros(path, std::ios::binary | std::ios::app);
    zeros << std::string(40, '\0');
  }
  Opened third = Open(dir);
  ASSERT_TRUE(third.journal.ok()) << third.journal.status();
  EXPECT_EQ(third.replay, (std::vector<std::string>{"kept", "after"}));
}

TEST(ServiceJournalTest, DamageBeforeTheEndIsDataLossNamingTheFileAndOffset) {
  const std::string dir = testing_util::TempPath("journal_damaged");
  {
    Opened first = Open(dir);
    ASSERT_TRUE(first.journal.ok());
    ASSERT_TRUE((*first.journal)->Append("first").ok());
    ASSERT_TRUE((*first.journal)->Append("second").ok());
  }
  const std::string path = dir + "/journal";
  std::string bytes = testing_util::ReadWholeFile(path);
  bytes[12] ^= 0x20;  // the first record's data
  testing_util::WriteFile(path, bytes);
  Opened damaged = Open(dir);
  ASSERT_FALSE(damaged.journal.ok());
  EXPECT_EQ(damaged.journal.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(damaged.journal.status().message().find(path), std::string::npos) << damaged.journal.status();
  EXPECT_NE(damaged.journal.status().message().find("offset 0"), std::string::npos)
      << damaged.journal.status();
}

TEST(ServiceJournalTest, OneDispatcherPerFolder) {
  const std::string dir = testing_util::TempPath("journal_locked");
  Opened first = Open(dir);
  ASSERT_TRUE(first.journal.ok());
  Opened second = Open(dir);
  EXPECT_EQ(second.journal.status().code(), absl::StatusCode::kFailedPrecondition) << second.journal.status();
  first.journal->reset();
  EXPECT_TRUE(Open(dir).journal.ok());
}

TEST(ServiceJournalTest, AFolderThatCannotBeCreatedIsNamed) {
  const std::string file = testing_util::TempPath("journal_not_a_folder");
  testing_util::WriteFile(file, "x");
  Opened opened = Open(file + "/sub");
  ASSERT_FALSE(opened.journal.ok());
  EXPECT_NE(opened.journal.status().message().find(file), std::string::npos) << opened.journal.status();
}

}  // namespace
}  // namespace service_journal_test_file
}  // namespace sluice::service
