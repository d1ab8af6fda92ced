// The one way Quill writes an output file (PNG, safetensors, GGUF, JSON), so that writing never
// destroys anything else:
//   - the bytes go to a temp file beside the target (same directory, so the rename is atomic),
//     which is flushed, fsync'ed and renamed over the target: a reader sees the old file or the
//     whole new one, never a truncated one;
//   - the target must be missing or a regular file; a symlink is written through to its target
//     only when that target is a regular file (or missing). Anything else (a device, a FIFO, a
//     socket, a directory) is refused before a byte is written;
//   - a target that is the same file (device + inode) as an input the process read is refused;
//   - on any failure only the writer's own temp file is removed; the target is never touched.
#pragma once

#include <cstdio>
#include <string>

#include "core/function_ref.h"
#include "core/input_files.h"
#include "quill/status.h"

namespace quill {

// Checks that `path` may be written (see above) without writing anything: kIo naming the path and
// why when it may not.
Status check_output_path(const std::string& path);

// Writes `path` through `write`, which gets the open temp file and returns its own Status (a
// short write is detected here too).
Status write_output_file(const std::string& path, FunctionRef<Status(std::FILE*)> write);

}  // namespace quill
