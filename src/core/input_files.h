// The files this process has read as inputs (by device + inode), so that no output can replace
// one (io/output_file.h). MappedFile::open notes every file it maps; other readers (images,
// sampler.json, batch files) note theirs.
#pragma once

#include <cstdint>
#include <string>

namespace quill {

// Notes `path` (following symlinks) as an input; a path that does not exist is ignored.
void note_input_file(const std::string& path);
void note_input_file(uint64_t device, uint64_t inode);
bool is_input_file(uint64_t device, uint64_t inode);

}  // namespace quill
