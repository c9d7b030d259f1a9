// Reading, hashing and storing one results file (ingest.hpp).

#include "harness/db/ingest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/db/field_checks.hpp"
#include "harness/db/sha256.hpp"
#include "harness/results/read.hpp"

namespace memstress::db {

ParsedFile parse_file(const std::filesystem::path& path) {
  ParsedFile parsed;
  FileIngest& file = parsed.file;
  file.path = path.string();
  try {
    const std::string text = read_results_file(path);
    Results results = parse_results(text);
    check_storable(results);
    parsed.sha256 = sha256_hex(text);
    parsed.results = std::move(results);
  } catch (const InputError& e) {
    file.error = e.what();
    return parsed;
  } catch (const nlohmann::json::exception& e) {
    file.error = fmt::format("not a valid results file: {}", e.what());
    return parsed;
  }
  file.format = parsed.results->format;
  return parsed;
}

FileIngest store_file(Store& store, ParsedFile parsed) {
  if (parsed.results) {
    // A database error (disk full, locked past the timeout) is the database's, not the file's: it ends the
    // ingest (DbError propagates), since every later file would fail the same way.
    parsed.file.outcome = store.ingest(*parsed.results, parsed.sha256, parsed.file.path);
  }
  return std::move(parsed.file);
}

FileIngest ingest_file(Store& store, const std::filesystem::path& path) {
  return store_file(store, parse_file(path));
}

void ingest_files(Store& store, const std::vector<std::filesystem::path>& paths, unsigned threads,
                  const std::function<void(const FileIngest&)>& each) {
  if (threads == 0) {
    threads = std::max(1U, std::thread::hardware_concurrency());
  }
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, paths.size()));
  if (threads <= 1) {
    for (const std::filesystem::path& path : paths) {
      each(ingest_file(store, path));
    }
    return;
  }
  const std::size_t window = 4 * std::size_t{threads};
  std::vector<std::optional<ParsedFile>> slots(paths.size());
  std::mutex mutex;
  std::condition_variable ready;    // a slot was filled
  std::condition_variable advance;  // the store moved on, or it stopped
  std::size_t next = 0;             // the next file a worker takes
  std::size_t stored = 0;           // files the store has taken
  bool stop = false;
  const auto work = [&] {
    for (;;) {
      std::size_t i = 0;
      {
        std::unique_lock lock(mutex);
        advance.wait(lock, [&] { return stop || next >= paths.size() || next < stored + window; });
        if (stop || next >= paths.size()) {
          return;
        }
        i = next++;
      }
      ParsedFile parsed;
      try {
        parsed = parse_file(paths[i]);
      } catch (...) {  // out of memory, a file system error: this file's, said so; nothing leaves the thread
        parsed = ParsedFile{};
        try {
          parsed.file.path = paths[i].string();
          parsed.file.error = "could not be read or parsed (out of memory?)";
        } catch (...) {  // NOLINT(bugprone-empty-catch): the file stays unnamed, still skipped
        }
      }
      {
        const std::lock_guard lock(mutex);
        slots[i] = std::move(parsed);
      }
      ready.notify_all();
    }
  };
  // Stops and joins the workers however this function ends (a DbError, an exception from `each`).
  struct Workers {
    std::vector<std::jthread> threads;
    std::mutex& mutex;
    bool& stop;
    std::condition_variable& advance;
    ~Workers() {
      {
        const std::lock_guard lock(mutex);
        stop = true;
      }
      advance.notify_all();
    }
  } workers{{}, mutex, stop, advance};
  for (unsigned t = 0; t < threads; ++t) {
    workers.threads.emplace_back(work);
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    ParsedFile parsed;
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return slots[i].has_value(); });
      parsed = std::move(*slots[i]);
      slots[i].reset();
      stored = i + 1;
    }
    advance.notify_all();
    each(store_file(store, std::move(parsed)));
  }
}

std::string describe(const FileIngest& file) {
  if (!file.outcome) {
    return fmt::format("skipped '{}': {}", file.path, file.error);
  }
  const IngestOutcome& o = *file.outcome;
  switch (o.action) {
    case IngestAction::added:
      return fmt::format("added '{}': {}, {} rows, {} GPUs", file.path, file.format, o.rows, o.gpus);
    case IngestAction::replaced:
      return fmt::format("replaced '{}': {}, {} rows, {} GPUs (the same run as '{}', which had fewer rows)",
                         file.path, file.format, o.rows, o.gpus, o.held_from);
    case IngestAction::same_run:
      return fmt::format("same run '{}': already held from '{}' ({} rows); nothing changed", file.path,
                         o.held_from, o.rows);
    case IngestAction::unchanged:
      return fmt::format("unchanged '{}': the same content was ingested from '{}'; nothing changed",
                         file.path, o.held_from);
  }
  return {};
}

}  // namespace memstress::db
