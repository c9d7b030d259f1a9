#include "harness/core/interrupt.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <exception>

namespace memstress {
namespace {

sigset_t watched() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// Ends the process by `signal`, its default action restored, from this thread.
[[noreturn]] void end_by(int signal) noexcept {
  std::fflush(stdout);
  std::fflush(stderr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signal, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signal);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::kill(::getpid(), signal);
  // The signal is pending for every thread that does not block it: this one. Should it not end us, go.
  _exit(128 + signal);
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(signal);
  }
}

InterruptWatch::InterruptWatch() {
  const sigset_t set = watched();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
  thread_ = std::jthread([this](const std::stop_token& stop) { watch(stop); });
}

InterruptWatch::~InterruptWatch() {
  thread_.request_stop();
  thread_.join();
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

InterruptWatch::Handler InterruptWatch::on_interrupt(std::function<void(int signal)> handler) {
  set_handler(std::move(handler));
  return Handler(*this);
}

void InterruptWatch::set_handler(std::function<void(int)> handler) {
  const std::lock_guard lock(mutex_);
  handler_ = std::move(handler);
}

void InterruptWatch::unblock_in_child() noexcept {
  const sigset_t set = watched();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void InterruptWatch::watch(const std::stop_token& stop) {
  const sigset_t set = watched();
  const timespec tick{0, 100'000'000};  // 0.1 s: how soon a finished watch notices it is stopped
  while (!stop.stop_requested()) {
    const int signal = sigtimedwait(&set, nullptr, &tick);
    if (signal <= 0) {
      continue;  // the tick, or EINTR
    }
    {
      const std::lock_guard lock(mutex_);
      if (handler_) {
        try {
          handler_(signal);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "memstress: while keeping the results after a signal: %s\n", e.what());
        }
      }
    }
    end_by(signal);
  }
}

}  // namespace memstress
