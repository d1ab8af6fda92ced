// Runs the real `quill` binary (QUILL_CLI_PATH) with shell-quoted arguments and captures its exit
// code, stdout and stderr; the CLI tests use it to check exit codes 0 / 1 / 2 and messages.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace quill::test {

struct CliRun {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `args` is pasted into a shell command line after the binary; stderr goes through `err_file`.
inline CliRun run_quill(const std::string& args, const std::string& err_file) {
  const std::string cmd = std::string("'") + QUILL_CLI_PATH + "' " + args + " 2>'" + err_file + "'";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  return r;
}

// The same with stderr in `dir`'s own file (any temp-dir type with file(name)).
template <typename Dir>
CliRun quill_cli(const std::string& args, const Dir& dir) {
  return run_quill(args, dir.file("stderr.txt"));
}

// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace quill::test
