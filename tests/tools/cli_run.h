// Runs the `dataflux` program (DATAFLUX_CLI) as a child process: through a pipe, or on a
// pseudo-terminal as a user's shell would.
#ifndef DATAFLUX_TESTS_TOOLS_CLI_RUN_H_
#define DATAFLUX_TESTS_TOOLS_CLI_RUN_H_

#include <pty.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace dataflux::testing {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Under the ThreadSanitizer build the program is instrumented too: a race it reports fails
// the test that ran it.
inline void expect_no_sanitizer_report(const CliRun& r) {
  EXPECT_EQ(r.output.find("WARNING: ThreadSanitizer"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ERROR: AddressSanitizer"), std::string::npos) << r.output;
}

// `env`: "NAME=value ..." before the command; `args` as a shell would split them.
inline CliRun run(const std::string& env, const std::string& args) {
  const std::string command = env + " " + DATAFLUX_CLI + " " + args + " 2>&1";
  CliRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  expect_no_sanitizer_report(r);
  return r;
}

// The same on a pseudo-terminal: stdout and stderr are the terminal.
inline CliRun run_on_terminal(const std::string& env, const std::string& args) {
  CliRun r;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return r;
  if (pid == 0) {
    const std::string command = "exec env " + env + " " + DATAFLUX_CLI + " " + args;
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(master, buffer, sizeof(buffer));
    if (n > 0) {
      r.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child has exited and the terminal has no other user
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  expect_no_sanitizer_report(r);
  return r;
}

}  // namespace dataflux::testing

#endif  // DATAFLUX_TESTS_TOOLS_CLI_RUN_H_
