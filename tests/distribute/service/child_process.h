// A child process for the multi-process service tests: the real `sluice` binary, its stdout read through
// a pipe, stderr kept in a file for failure messages. Every wait is bounded; the destructor kills what
// is still running (SIGKILL) and reaps it.
#ifndef SLUICE_TESTS_DISTRIBUTE_SERVICE_CHILD_PROCESS_H_
#define SLUICE_TESTS_DISTRIBUTE_SERVICE_CHILD_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice::service::testing {

class ChildProcess {
 public:
  // Starts `program` with `args`; stderr goes to `stderr_path`.
  ChildProcess(const std::string& program, const std::vector<std::string>& args, std::string stderr_path)
      : stderr_path_(std::move(stderr_path)) {
    // Everything the child needs is prepared before fork: between fork and exec only async-signal-safe
    // calls (no allocation: another thread may hold the allocator's lock).
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) ::dup2(err, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_fd_ = out[0];
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0 && !exit_status_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }

  bool started() const { return pid_ > 0 && stdout_fd_ >= 0; }

  // The next line of stdout, or nullopt after `timeout` or at EOF.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (size_t nl = buffered_.find('\n'); nl != std::string::npos) {
        std::string line = buffered_.substr(0, nl);
        buffered_.erase(0, nl + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{stdout_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffered_.append(chunk, static_cast<size_t>(n));
    }
  }

  void Signal(int signal) {
    if (pid_ > 0 && !exit_status_) ::kill(pid_, signal);
  }

  // The exit status (WEXITSTATUS, or 128 + signal) once the process ended within `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_status_) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return exit_status_;
  }

  std::string Stderr() const {
    std::ifstream in(stderr_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string stderr_path_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  std::optional<int> exit_status_;
};

}  // namespace sluice::service::testing

#endif  // SLUICE_TESTS_DISTRIBUTE_SERVICE_CHILD_PROCESS_H_
