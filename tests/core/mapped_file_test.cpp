// MappedFile::release_pages: pages of a live map given back (resident memory falls, the bytes read
// back the same), and nothing done to memory outside a map.
#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../io/io_test_util.h"

namespace quill {
namespace {

// Resident pages of this process (/proc/self/statm, second field).
long resident_pages() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident;
}

std::vector<char> pattern(size_t n) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = char((i * 131 + i / 4096) & 0xFF);
  return v;
}

TEST(MappedFile, ReleasePagesFreesThemAndTheBytesReadBackTheSame) {
  const size_t bytes = size_t(32) << 20;
  const std::vector<char> want = pattern(bytes);
  testing::TempDir dir;
  const std::string path = dir.file("pages.bin");
  std::ofstream(path, std::ios::binary).write(want.data(), std::streamsize(bytes));
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const uint8_t* p = (*f)->data();
  long sum = 0;
  for (size_t i = 0; i < bytes; i += 4096) sum += p[i];  // fault every page in
  const long touched = resident_pages();
  ASSERT_TRUE(MappedFile::release_pages(p + 100, bytes - 200));
  const long released = resident_pages();
  const long page = sysconf(_SC_PAGESIZE);
  EXPECT_GE(touched - released, long(bytes / 2) / page) << "resident pages " << touched << " -> " << released;
  EXPECT_EQ(0, std::memcmp(p, want.data(), bytes)) << sum;
}

TEST(MappedFile, ReleasePagesLeavesMemoryOutsideAMapAlone) {
  const std::vector<char> want = pattern(size_t(1) << 20);
  std::vector<char> heap = want;
  EXPECT_FALSE(MappedFile::release_pages(heap.data(), heap.size()));
  EXPECT_EQ(heap, want);

  testing::TempDir dir;
  const std::string path = dir.file("small.bin");
  std::ofstream(path, std::ios::binary).write(want.data(), 8192);
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.is_ok());
  EXPECT_FALSE(MappedFile::release_pages((*f)->data() + 4096, 8192)) << "a range running past the map's end";
  EXPECT_TRUE(MappedFile::release_pages((*f)->data(), 8192));
}

}  // namespace
}  // namespace quill
