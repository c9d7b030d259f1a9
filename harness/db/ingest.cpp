// Reading, hashing and storing one results file (ingest.hpp).

#include "harness/db/ingest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
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

FileIngest store_file(Store& store, ParsedFile parsed, const IngestOptions& options) {
  if (parsed.results) {
    // A database error (disk full, locked past the timeout) is the database's, not the file's: it ends the
    // ingest (DbError propagates), since every later file would fail the same way.
    parsed.file.outcome = store.ingest(*parsed.results, parsed.sha256, parsed.file.path, options);
  }
  return std::move(parsed.file);
}

FileIngest ingest_file(Store& store, const std::filesystem::path& path, const IngestOptions& options) {
  return store_file(store, parse_file(path), options);
}

namespace {

bool results_file_name(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  for (const std::string_view end : {".json", ".jsonl", ".json.xz", ".json.gz", ".jsonl.xz", ".jsonl.gz"}) {
    if (name.size() > end.size() && name.ends_with(end)) {
      return true;
    }
  }
  return false;
}

}  // namespace

struct PathSource::Walk {
  std::string folder;
  std::filesystem::recursive_directory_iterator at;
};

PathSource::PathSource(std::vector<std::string> arguments, std::istream& list)
    : arguments_(std::move(arguments)), list_(&list) {}

PathSource::~PathSource() = default;

std::optional<PathSource::Item> PathSource::next() {
  for (;;) {
    if (walk_) {
      std::error_code ec;
      auto& it = walk_->at;
      while (it != std::filesystem::recursive_directory_iterator()) {
        const std::filesystem::directory_entry entry = *it;
        it.increment(ec);
        if (ec) {
          // A folder under it that vanished or cannot be listed: named, and the walk ends there.
          const std::string why = ec.message();
          it = std::filesystem::recursive_directory_iterator();
          return Item{entry.path(),
                      fmt::format("a folder under '{}' cannot be listed: {}", walk_->folder, why)};
        }
        std::error_code type_ec;
        if (entry.is_regular_file(type_ec) && results_file_name(entry.path())) {
          ++from_input_;
          return Item{entry.path(), ""};
        }
      }
      const std::string folder = walk_->folder;
      walk_.reset();
      if (from_input_ == 0) {
        return Item{folder,
                    "no results files in it (names ending in .json, .jsonl, .json.xz, .json.gz, .jsonl.xz or "
                    ".jsonl.gz, in it or in folders under it)"};
      }
    }
    if (in_list_) {
      std::string line;
      while (std::getline(*list_, line)) {
        if (!line.empty() && line.back() == '\r') {
          line.pop_back();
        }
        if (!line.empty()) {
          ++from_input_;
          return Item{line, ""};
        }
      }
      in_list_ = false;
      if (from_input_ == 0) {
        return Item{"-", "standard input listed no file (one path a line)"};
      }
    }
    if (at_ >= arguments_.size()) {
      return std::nullopt;
    }
    const std::string& argument = arguments_[at_++];
    from_input_ = 0;
    if (argument == "-") {
      in_list_ = true;
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(argument, ec)) {
      std::filesystem::recursive_directory_iterator it(
          argument, std::filesystem::directory_options::skip_permission_denied, ec);
      if (ec) {
        return Item{argument, fmt::format("a folder that cannot be listed: {}", ec.message())};
      }
      walk_ = std::make_unique<Walk>(Walk{argument, std::move(it)});
      continue;
    }
    return Item{argument, ""};
  }
}

void ingest_files(Store& store, PathSource& source, const IngestSettings& settings,
                  const std::function<void(const FileIngest&)>& each) {
  unsigned threads =
      settings.threads == 0 ? std::max(1U, std::thread::hardware_concurrency()) : settings.threads;
  const std::size_t window = 4 * std::size_t{threads};
  std::mutex mutex;
  std::condition_variable ready;             // a parsed file was put in `parsed`
  std::condition_variable advance;           // the store moved on, or it stopped
  std::map<std::size_t, ParsedFile> parsed;  // by position, at most `window` ahead of the store
  std::size_t next = 0;                      // the position of the next file a worker takes
  std::size_t stored = 0;                    // files the store has taken
  bool exhausted = false;                    // the source gave its last file (next is their number)
  bool stop = false;
  std::mutex source_mutex;  // the source is read by one worker at a time, outside `mutex` (stdin may block)
  const auto work = [&] {
    for (;;) {
      std::size_t i = 0;
      PathSource::Item item;
      {
        std::unique_lock source_lock(source_mutex);
        {
          std::unique_lock lock(mutex);
          advance.wait(lock, [&] { return stop || exhausted || next < stored + window; });
          if (stop || exhausted) {
            return;
          }
        }
        std::optional<PathSource::Item> got;
        bool last = false;
        try {
          got = source.next();
        } catch (const std::exception& e) {  // reading standard input or a folder failed: said, and the end
          got = PathSource::Item{"-", e.what()};
          last = true;
        }
        const std::lock_guard lock(mutex);
        if (!got) {
          exhausted = true;
          ready.notify_all();
          return;
        }
        exhausted = last;
        item = std::move(*got);
        i = next++;
      }
      ParsedFile file;
      try {
        if (item.error.empty()) {
          file = parse_file(item.path);
        } else {
          file.file.path = item.path.string();
          file.file.error = item.error;
        }
      } catch (...) {  // out of memory, a file system error: this file's, said so; nothing leaves the thread
        file = ParsedFile{};
        try {
          file.file.path = item.path.string();
          file.file.error = "could not be read or parsed (out of memory?)";
        } catch (...) {  // NOLINT(bugprone-empty-catch): the file stays unnamed, still skipped
        }
      }
      {
        const std::lock_guard lock(mutex);
        parsed.emplace(i, std::move(file));
      }
      ready.notify_all();
    }
  };
  // Stops and joins the workers however this function ends (a DbError, an exception from `each`).
  struct Workers {  // NOLINT(cppcoreguidelines-special-member-functions): a scope's guard, never copied or
                    // moved
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
  // The batch in flight and its files' outcomes, told once it is committed.
  std::optional<IngestBatch> batch;
  std::vector<FileIngest> told_at_commit;
  std::size_t in_batch = 0;
  auto opened = std::chrono::steady_clock::now();
  const auto not_stored = [&](const DbError& e, std::size_t files) {
    return DbError(fmt::format(
        "{}; the {} file(s) of the batch in flight were not stored (ingest them again)", e.what(), files));
  };
  const auto commit = [&] {
    if (batch) {
      try {
        batch->commit();
      } catch (const DbError& e) {
        throw not_stored(e, in_batch);
      }
      batch.reset();
      in_batch = 0;
    }
    for (const FileIngest& f : told_at_commit) {
      each(f);
    }
    told_at_commit.clear();
  };
  for (;;) {
    ParsedFile file;
    {
      std::unique_lock lock(mutex);
      const auto arrived = [&] { return parsed.contains(stored) || (exhausted && stored >= next); };
      // A batch open past its time while the next file is slow to come (a list read from a slow pipe) is
      // committed meanwhile: the writer lock is not held waiting for input.
      if (batch && !ready.wait_until(lock, opened + settings.batch_time, arrived)) {
        lock.unlock();
        commit();
        lock.lock();
      }
      ready.wait(lock, arrived);
      const auto at = parsed.find(stored);
      if (at == parsed.end()) {
        break;  // every file stored
      }
      file = std::move(at->second);
      parsed.erase(at);
      ++stored;
    }
    advance.notify_all();
    if (file.results) {
      if (!batch) {
        batch.emplace(store, settings.store);
        opened = std::chrono::steady_clock::now();
      }
      try {
        file.file.outcome = batch->add(*file.results, file.sha256, file.file.path);
      } catch (const DbError& e) {
        throw not_stored(e, in_batch + 1);
      }
      ++in_batch;
    }
    told_at_commit.push_back(std::move(file.file));
    // A batch of so many files (stored, or skipped: told in order with them), or one open past its time.
    if (in_batch >= settings.batch_files || told_at_commit.size() >= settings.batch_files ||
        (batch && std::chrono::steady_clock::now() - opened >= settings.batch_time)) {
      commit();
    }
  }
  commit();
}

void ingest_files(Store& store, const std::vector<std::filesystem::path>& paths, unsigned threads,
                  const std::function<void(const FileIngest&)>& each) {
  std::vector<std::string> arguments;
  arguments.reserve(paths.size());
  for (const std::filesystem::path& p : paths) {
    arguments.push_back(p.string());
  }
  std::istringstream none;
  PathSource source(std::move(arguments), none);
  IngestSettings settings;
  settings.threads = threads;
  ingest_files(store, source, settings, each);
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
