// The one output writer (io/output_file.h): it replaces regular files atomically, writes through a
// symlink to a regular file, and refuses (touching nothing) devices, FIFOs, directories, symlinks to
// those, and files the process read as inputs; on failure only its own temp file goes away.
// Device nodes are made with mknod inside the test's own temp dir (never /dev), when permitted.
#include "io/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/mapped_file.h"
#include "io/image.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"

namespace quill {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Status write_text(const std::string& path, const std::string& text) {
  return write_output_file(path, [&](std::FILE* f) {
    return std::fwrite(text.data(), 1, text.size(), f) == text.size() ? Status::ok() : io_error("short write");
  });
}

size_t entries(const testing::TempDir& dir) {
  return size_t(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()));
}

TEST(OutputFile, ReplacesARegularFileAndLeavesNoTemp) {
  testing::TempDir dir;
  const std::string p = dir.file("out.txt");
  ASSERT_TRUE(write_text(p, "old").is_ok());
  ASSERT_TRUE(write_text(p, "new contents").is_ok());
  EXPECT_EQ(slurp(p), "new contents");
  EXPECT_EQ(entries(dir), 1u);
  struct stat sb {};
  ASSERT_EQ(::stat(p.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0644u);
}

TEST(OutputFile, AFailedWriteKeepsTheOldFileAndRemovesOnlyItsTemp) {
  testing::TempDir dir;
  const std::string p = dir.file("out.txt");
  ASSERT_TRUE(write_text(p, "keep me").is_ok());
  Status st = write_output_file(p, [](std::FILE* f) {
    std::fputs("partial", f);
    return io_error("encoder failed");
  });
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find(p), std::string::npos) << st.to_string();
  EXPECT_EQ(slurp(p), "keep me");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(OutputFile, WritesThroughASymlinkToARegularFile) {
  testing::TempDir dir;
  const std::string target = dir.file("real.txt"), link = dir.file("link.txt");
  ASSERT_TRUE(write_text(target, "old").is_ok());
  ASSERT_EQ(::symlink("real.txt", link.c_str()), 0);
  ASSERT_TRUE(write_text(link, "through").is_ok());
  EXPECT_EQ(slurp(target), "through");
  struct stat lsb {};
  ASSERT_EQ(::lstat(link.c_str(), &lsb), 0);
  EXPECT_TRUE(S_ISLNK(lsb.st_mode)) << "the link itself is kept";
}

TEST(OutputFile, RefusesFifosDirectoriesAndLinksToThemTouchingNothing) {
  testing::TempDir dir;
  const std::string fifo = dir.file("fifo"), sub = dir.file("sub"), link = dir.file("to_fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(sub);
  ASSERT_EQ(::symlink("fifo", link.c_str()), 0);
  for (const std::string& p : {fifo, sub, link}) {
    Status st = write_text(p, "x");
    ASSERT_FALSE(st.is_ok()) << p;
    EXPECT_EQ(st.code(), ErrorCode::kIo);
    EXPECT_NE(st.message().find("refusing"), std::string::npos) << st.to_string();
  }
  struct stat sb {};
  ASSERT_EQ(::stat(fifo.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISFIFO(sb.st_mode));
  EXPECT_EQ(entries(dir), 3u);
}

TEST(OutputFile, ACycleOfSymlinksIsAnErrorNotARecursion) {
  testing::TempDir dir;
  ASSERT_EQ(::symlink("b", dir.file("a").c_str()), 0);
  ASSERT_EQ(::symlink("a", dir.file("b").c_str()), 0);
  ASSERT_EQ(::symlink("self", dir.file("self").c_str()), 0);
  for (const char* name : {"a", "self"}) {
    Status st = write_text(dir.file(name), "x");
    ASSERT_FALSE(st.is_ok()) << name;
    EXPECT_EQ(st.code(), ErrorCode::kIo) << st.to_string();
  }
  EXPECT_EQ(entries(dir), 3u);
}

TEST(OutputFile, NeverReplacesOrDeletesADeviceNode) {
  testing::TempDir dir;
  const std::string node = dir.file("full");
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "mknod not permitted here (needs root outside a restricted container)";
  // The PNG writer (what `quill line -o /dev/full` used) refuses before writing and keeps the node.
  Image img{2, 2, 1, std::vector<uint8_t>(4, 255)};
  Status st = write_png(node, img);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("character device"), std::string::npos) << st.to_string();
  struct stat sb {};
  ASSERT_EQ(::stat(node.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISCHR(sb.st_mode));
  EXPECT_EQ(entries(dir), 1u);
}

TEST(OutputFile, RefusesToOverwriteAnInputOfThisProcess) {
  testing::TempDir dir;
  const std::string in = dir.file("in.safetensors"), alias = dir.file("alias.safetensors");
  std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(write_safetensors(in, {{"x", Tensor(v.data(), DType::kF32, {3})}}).is_ok());
  const std::string before = slurp(in);
  auto mapped = MappedFile::open(in);  // what every model / tensor reader does
  ASSERT_TRUE(mapped.is_ok());
  ASSERT_EQ(::symlink(in.c_str(), alias.c_str()), 0);
  for (const std::string& p : {in, alias}) {
    Status st = write_text(p, "clobber");
    ASSERT_FALSE(st.is_ok()) << p;
    EXPECT_NE(st.message().find("input"), std::string::npos) << st.to_string();
  }
  EXPECT_EQ(slurp(in), before);
}

}  // namespace
}  // namespace quill
