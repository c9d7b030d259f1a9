#pragma once

// Note [Interrupted runs]
// SIGINT (Ctrl-C), SIGTERM (a scheduler's stop, `kill`) and SIGHUP used to end a run where it stood: the
// finished rows were in the .jsonl, but no footer, no final document and no JUnit file were written, and
// forked dataloader workers polled on for a minute. A signal handler can do almost nothing safely (no
// locks, no allocation), so memstress takes these signals synchronously instead: an InterruptWatch blocks
// them in the thread that creates it — before MPI, CUDA or any worker thread exists, so every thread
// inherits the block — and one thread of its own waits for them with sigtimedwait. On the first signal that
// thread runs the handler the command registered (an ordinary function: it finishes the results as
// "aborted", interrupted by the signal, and writes JUnit where asked), then ends the process by the same
// signal, so a shell or scheduler sees what it sent (exit status 128 + signal). The case in flight is
// abandoned, not finished: its device work dies with the process and the driver takes its memory back.
// Forked workers die with the process (PR_SET_PDEATHSIG, suites/support/batch_ring.cpp) and unblock the
// signals they inherited, so a signal sent to them alone also ends them. A second signal while the handler
// runs is not waited for: the first one's ending follows.

#include <csignal>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace memstress {

// "SIGINT", "SIGTERM", "SIGHUP", else "signal N".
[[nodiscard]] std::string signal_name(int signal);

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
  InterruptWatch(InterruptWatch&&) = delete;
  InterruptWatch& operator=(InterruptWatch&&) = delete;

  // What to do first when a signal comes (on the watching thread), for as long as the returned handle lives
  // (destroy it before what the handler touches). Without a handler, the signal ends the process at once.
  class Handler {
   public:
    ~Handler() { watch_.set_handler(nullptr); }
    Handler(const Handler&) = delete;
    Handler& operator=(const Handler&) = delete;
    Handler(Handler&&) = delete;
    Handler& operator=(Handler&&) = delete;

   private:
    friend class InterruptWatch;
    explicit Handler(InterruptWatch& watch) noexcept : watch_(watch) {}
    InterruptWatch& watch_;
  };
  [[nodiscard]] Handler on_interrupt(std::function<void(int signal)> handler);
  // Unblocks the signals in the calling thread: for a forked child, which inherits the block.
  static void unblock_in_child() noexcept;

 private:
  void watch(const std::stop_token& stop);
  void set_handler(std::function<void(int)> handler);

  std::mutex mutex_;
  std::function<void(int)> handler_;
  sigset_t previous_{};
  std::jthread thread_;
};

}  // namespace memstress
