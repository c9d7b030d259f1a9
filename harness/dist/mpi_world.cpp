#include "harness/dist/mpi_world.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/mpi_check.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/mpi_session.hpp"

namespace memstress {
namespace {

constexpr int kGatherTag = 101;
constexpr int kArriveTag = 102;
constexpr int kReleaseTag = 103;

// A communicator freed when it goes out of scope.
class OwnedComm {
 public:
  OwnedComm() = default;
  ~OwnedComm() {
    if (comm != MPI_COMM_NULL) {
      MEMSTRESS_MPI_WARN(MPI_Comm_free(&comm));
    }
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  OwnedComm(OwnedComm&&) = delete;
  OwnedComm& operator=(OwnedComm&&) = delete;
  MPI_Comm comm = MPI_COMM_NULL;
};

// Sleeps a little longer each time, up to 1 ms: quick when the peer is there, cheap when it is not. A
// spinning one never sleeps (MpiWorld::spin_barrier).
class Backoff {
 public:
  explicit Backoff(bool spin = false) noexcept : spin_(spin) {}
  void pause() {
    if (spin_) {
      return;
    }
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, std::chrono::microseconds(1000));
  }

 private:
  bool spin_;
  std::chrono::microseconds delay_{1};
};

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

double seconds(std::chrono::milliseconds ms) {
  return std::chrono::duration<double>(ms).count();
}

// This rank's node name (Note [Nodes]): MEMSTRESS_NODE where set, else MPI's processor name. A name too long
// for MPI is returned whole: node_colour refuses it on every rank at once.
std::string node_name() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read in MPI's setup, before any thread of ours starts
  if (const char* node = std::getenv("MEMSTRESS_NODE"); node != nullptr && *node != '\0') {
    return node;
  }
  std::array<char, MPI_MAX_PROCESSOR_NAME> buffer{};
  int length = 0;
  MEMSTRESS_MPI_TRY(MPI_Get_processor_name(buffer.data(), &length));
  return {buffer.data(), static_cast<std::size_t>(std::max(length, 0))};
}

// Within `shared` (the ranks of one host), the ranks with the same node name as this one: their colour
// is the lowest rank of `shared` with that name.
// Every rank of `world` learns first whether every name fits, so that a bad one is refused by all of them
// together (one rank refusing alone would leave the others waiting in the next collective).
int node_colour(MPI_Comm world, MPI_Comm shared, const std::string& node) {
  int fits = node.size() < MPI_MAX_PROCESSOR_NAME ? 1 : 0;
  MEMSTRESS_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, world));
  if (fits == 0) {
    constexpr int kLongest = MPI_MAX_PROCESSOR_NAME - 1;
    throw InputError(
        node.size() > kLongest
            ? fmt::format("MEMSTRESS_NODE: {} characters; a node name has at most {}", node.size(), kLongest)
            : fmt::format("MEMSTRESS_NODE: another rank's node name is longer than {} characters", kLongest));
  }
  int size = 0;
  int rank = 0;
  MEMSTRESS_MPI_TRY(MPI_Comm_size(shared, &size));
  MEMSTRESS_MPI_TRY(MPI_Comm_rank(shared, &rank));
  std::array<char, MPI_MAX_PROCESSOR_NAME> mine{};
  std::copy(node.begin(), node.end(), mine.begin());
  std::vector<char> all(static_cast<std::size_t>(size) * mine.size());
  MEMSTRESS_MPI_TRY(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
                                  static_cast<int>(mine.size()), MPI_CHAR, shared));
  for (int r = 0; r < size; ++r) {
    if (std::string_view(all.data() + static_cast<std::size_t>(r) * mine.size()) == node) {
      return r;
    }
  }
  return rank;
}

}  // namespace

MpiWorld::MpiWorld(const MpiSession& /*session*/, std::chrono::milliseconds timeout)
    : node_(node_name()), timeout_(std::max(timeout, std::chrono::milliseconds(1))) {
  MEMSTRESS_MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  try {
    MEMSTRESS_MPI_TRY(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MEMSTRESS_MPI_TRY(MPI_Comm_rank(comm_, &rank_));
    MEMSTRESS_MPI_TRY(MPI_Comm_size(comm_, &size_));
    OwnedComm shared;  // the ranks that share this host's memory
    MEMSTRESS_MPI_TRY(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared.comm));
    MEMSTRESS_MPI_TRY(MPI_Comm_rank(shared.comm, &host_rank_));
    OwnedComm local;  // of those, the ones of this node (Note [Nodes])
    const int colour = node_colour(comm_, shared.comm, node_);
    MEMSTRESS_MPI_TRY(MPI_Comm_split(shared.comm, colour, rank_, &local.comm));
    MEMSTRESS_MPI_TRY(MPI_Comm_rank(local.comm, &local_rank_));
    MEMSTRESS_MPI_TRY(MPI_Comm_size(local.comm, &local_size_));
  } catch (...) {
    MEMSTRESS_MPI_WARN(MPI_Comm_free(&comm_));  // the destructor does not run for a constructor that throws
    throw;
  }
}

MpiWorld::~MpiWorld() {
  if (comm_ != MPI_COMM_NULL) {
    MEMSTRESS_MPI_WARN(MPI_Comm_free(&comm_));
  }
}

std::chrono::milliseconds MpiWorld::patience() const noexcept {
  return rank_ == 0 ? timeout_ : timeout_ + std::min(timeout_, kRankZeroGrace);
}

void MpiWorld::wait(MPI_Request& request, std::string_view what, Pace pace) const {
  const auto deadline = std::chrono::steady_clock::now() + patience();
  Backoff backoff(pace == Pace::spin);
  for (;;) {
    int done = 0;
    MEMSTRESS_MPI_TRY(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done != 0) {
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw DistError(fmt::format("rank {}: {} did not finish within {} s (a rank failed or hangs)", rank_,
                                  what, seconds(patience())));
    }
    backoff.pause();
  }
}

std::vector<std::string> MpiWorld::collect(const std::string& text, int tag, Pace pace) {
  if (rank_ != 0) {
    if (text.size() > static_cast<std::size_t>(INT_MAX)) {
      throw DistError(fmt::format("rank {}: {} bytes are too many to gather", rank_, text.size()));
    }
    MPI_Request request = MPI_REQUEST_NULL;
    MEMSTRESS_MPI_TRY(
        MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, tag, comm_, &request));
    wait(request, "sending to rank 0", pace);
    return {};
  }
  std::vector<std::string> texts(static_cast<std::size_t>(size_));
  texts[0] = text;
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r) {
    missing.push_back(r);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  Backoff backoff(pace == Pace::spin);
  while (!missing.empty()) {
    bool progress = false;
    for (auto it = missing.begin(); it != missing.end();) {
      int found = 0;
      MPI_Message message = MPI_MESSAGE_NULL;
      MPI_Status status{};
      MEMSTRESS_MPI_TRY(MPI_Improbe(*it, tag, comm_, &found, &message, &status));
      if (found == 0) {
        ++it;
        continue;
      }
      int count = 0;
      MEMSTRESS_MPI_TRY(MPI_Get_count(&status, MPI_CHAR, &count));
      std::string& into = texts[static_cast<std::size_t>(*it)];
      into.resize(static_cast<std::size_t>(count));
      MEMSTRESS_MPI_TRY(MPI_Mrecv(into.data(), count, MPI_CHAR, &message, MPI_STATUS_IGNORE));
      it = missing.erase(it);
      progress = true;
    }
    if (missing.empty()) {
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw DistError(fmt::format("{} did not report within {} s (failed or hangs)", rank_list(missing),
                                  seconds(timeout_)));
    }
    if (!progress) {
      backoff.pause();
    }
  }
  return texts;
}

std::vector<std::string> MpiWorld::gather(const std::string& text) {
  return collect(text, kGatherTag);
}

void MpiWorld::barrier() {
  barrier(Pace::relaxed);
}

void MpiWorld::spin_barrier() {
  barrier(Pace::spin);
}

void MpiWorld::barrier(Pace pace) {
  // Everyone reports to rank 0 (which names the missing), then rank 0 releases everyone. Each arrival says
  // which kind of barrier it is at: a rank that left a case the others are timing (its prepare threw, its
  // device was lost) arrives at the next case's start while they wait at a timed window's, and would release
  // them into rows that were never measured together. Rank 0 refuses that pairing: its release says so, and
  // every rank throws DistError at once rather than carry on out of step.
  const std::string kind = pace == Pace::spin ? "a timed window's start" : "a step's start";
  const std::vector<std::string> arrived = collect(kind, kArriveTag, pace);
  char token = 0;
  if (rank_ != 0) {
    MPI_Request request = MPI_REQUEST_NULL;
    MEMSTRESS_MPI_TRY(MPI_Irecv(&token, 1, MPI_CHAR, 0, kReleaseTag, comm_, &request));
    wait(request, "waiting for rank 0 at a barrier", pace);
    if (token != 0) {
      throw DistError(
          fmt::format("rank {} at {}: rank 0 found the ranks at different steps (a rank left a "
                      "case the others ran)",
                      rank_, kind));
    }
    return;
  }
  std::string apart;
  for (std::size_t r = 0; r < arrived.size(); ++r) {
    if (arrived[r] != kind && apart.empty()) {
      apart = fmt::format(
          "rank {} arrived at {} while rank 0 waits at {}: the ranks are at different steps (a "
          "rank left a case the others ran)",
          r, arrived[r], kind);
    }
  }
  token = apart.empty() ? 0 : 1;
  std::vector<MPI_Request> requests(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    MEMSTRESS_MPI_TRY(
        MPI_Isend(&token, 1, MPI_CHAR, r, kReleaseTag, comm_, &requests[static_cast<std::size_t>(r)]));
  }
  for (MPI_Request& request : requests) {
    wait(request, "releasing the ranks from a barrier", pace);
  }
  if (!apart.empty()) {
    throw DistError(apart);
  }
}

void MpiWorld::broadcast(std::span<std::byte> bytes, int root) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw DistError(fmt::format("rank {}: {} bytes are too many to broadcast", rank_, bytes.size()));
  }
  MPI_Request request = MPI_REQUEST_NULL;
  MEMSTRESS_MPI_TRY(
      MPI_Ibcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, root, comm_, &request));
  wait(request, fmt::format("a broadcast from rank {}", root));
}

std::vector<double> MpiWorld::all_gather(double value) {
  std::vector<double> values(static_cast<std::size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  MEMSTRESS_MPI_TRY(MPI_Iallgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, comm_, &request));
  wait(request, "an all-gather");
  return values;
}

}  // namespace memstress
