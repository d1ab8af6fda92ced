// `quill line --batch-file`: names from the file's line numbers on the final path component only,
// blank lines skipped but counted, a one-line batch numbered too, --skip-existing resumes, and
// devices, directories and over-long lines are clear usage errors (never unbounded reads).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "io/io_test_util.h"
#include "support/cli_run.h"

namespace quill {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::quill_cli;

TEST(BatchFileCli, NamesFollowLineNumbersAndTheFinalPathComponent) {
  testing::TempDir dir;
  fs::create_directories(dir.file("v1.2"));
  std::ofstream(dir.file("b.txt")) << "Hej\n\n  \nKongl.\r\n";
  CliRun r = quill_cli(
      "line --batch-file '" + dir.file("b.txt") + "' --steps 1 --device cpu -o '" + dir.file("v1.2/line") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir.file("v1.2/line_0001.png")));
  EXPECT_TRUE(fs::exists(dir.file("v1.2/line_0004.png")));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.file("v1.2")), fs::directory_iterator()), 2);

  // Resume: line 4's output is gone, line 1's is kept as it is.
  fs::remove(dir.file("v1.2/line_0004.png"));
  const auto t1 = fs::last_write_time(dir.file("v1.2/line_0001.png"));
  CliRun again = quill_cli("line --batch-file '" + dir.file("b.txt") + "' --steps 1 --device cpu --skip-existing -o '" +
                               dir.file("v1.2/line") + "'",
                           dir);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("skipped 1 line"), std::string::npos) << again.out;
  EXPECT_TRUE(fs::exists(dir.file("v1.2/line_0004.png")));
  EXPECT_EQ(fs::last_write_time(dir.file("v1.2/line_0001.png")), t1);

  std::ofstream(dir.file("one.txt")) << "solo\n";
  CliRun one = quill_cli(
      "line --batch-file '" + dir.file("one.txt") + "' --steps 1 --device cpu -o '" + dir.file("o.png") + "'", dir);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_TRUE(fs::exists(dir.file("o_0001.png")));
}

TEST(BatchFileCli, BadBatchFilesAreUsageErrors) {
  testing::TempDir dir;
  std::ofstream(dir.file("long.txt")) << std::string(5000, 'a') << "\n";
  std::ofstream(dir.file("blank.txt")) << "\n \n";
  const std::string out = " -o '" + dir.file("x.png") + "'";
  for (const std::string& f :
       {dir.path().string(), dir.file("long.txt"), dir.file("blank.txt"), std::string("/dev/zero")}) {
    CliRun r = quill_cli("line --steps 1 --batch-file '" + f + "'" + out, dir);
    EXPECT_EQ(r.code, 2) << f << ": " << r.err;
    EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
  }
  CliRun empty = quill_cli("line --text ''" + out, dir);
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("non-empty"), std::string::npos) << empty.err;
}

}  // namespace
}  // namespace quill
