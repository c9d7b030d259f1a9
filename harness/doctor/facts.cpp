#include "harness/doctor/facts.hpp"

#include <fmt/format.h>

#include <limits>

#include "harness/core/error.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_input.hpp"
#include "harness/core/text_file.hpp"

namespace memstress::doctor {
namespace {

// A site index of the file: one of its sites, kNoFrames or kBeforeRecording.
std::int32_t site_index(const JsonField& field, std::size_t sites) {
  return static_cast<std::int32_t>(field.integer(kBeforeRecording, static_cast<std::int64_t>(sites) - 1));
}

}  // namespace

std::optional<std::uint64_t> SnapshotFacts::recorded_number(const char* key) const {
  if (!recorder.is_object()) {
    return std::nullopt;
  }
  const auto it = recorder.find(key);
  if (it == recorder.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() == 0) {
    return std::nullopt;  // a recorder's zero is no figure
  }
  return it->get<std::uint64_t>();
}

bool SnapshotFacts::marked(std::uint64_t id, std::string_view mark) const noexcept {
  if (id >= alloc_marks.size() || alloc_marks[id] < 0) {
    return false;
  }
  return marks[static_cast<std::size_t>(alloc_marks[id])] == mark;
}

SnapshotFacts read_facts(const std::filesystem::path& path, const std::string& name) {
  // The converter wrote this file moments ago, but from a pickle of another machine: every field is checked
  // (JsonField: a wrong type or a number out of range is InputError, never an nlohmann exception or UB).
  const auto fail = [&](const std::string& what) -> InputError {
    return InputError(fmt::format("{}: the converter's facts: {}", name, what));
  };
  const std::optional<std::string> text = read_text_file(path);
  if (!text) {
    throw fail(fmt::format("file: cannot read {}", path.string()));
  }
  nlohmann::json doc;
  try {
    doc = parse_json_input(*text);  // Note [Bounded JSON input]
  } catch (const InputError& e) {
    throw fail(fmt::format("file: {}", e.what()));
  }
  const auto schema = doc.is_object() ? doc.find("schema") : doc.end();
  if (schema == doc.end() || !schema->is_string() || *schema != "memstress.snapshot-facts/1") {
    throw fail("file: not a memstress.snapshot-facts/1 document");
  }
  try {
    const JsonField top(doc);
    SnapshotFacts f;
    f.source = top["source"].string();
    f.frames_recorded = top["frames_recorded"].boolean();
    for (const JsonField& site : top["sites"].elements()) {
      Site s;
      s.where = site["where"].string();
      s.filename = site["filename"].string();
      s.line = site["line"].integer(std::numeric_limits<std::int64_t>::min(),
                                    std::numeric_limits<std::int64_t>::max());
      s.function = site["function"].string();
      s.user_code = site["user_code"].boolean();
      for (const JsonField& frame : site["stack"].elements()) {
        s.stack.push_back(frame.string());
      }
      f.sites.push_back(std::move(s));
    }
    for (const JsonField& site : top["alloc_sites"].elements()) {
      f.alloc_sites.push_back(site_index(site, f.sites.size()));
    }
    if (const std::optional<JsonField> segments = top.find("segment_addresses")) {
      for (const JsonField& address : segments->elements()) {
        f.segment_addresses.push_back(address.count());
      }
    }
    if (const std::optional<JsonField> marks = top.find("marks")) {
      for (const JsonField& mark : marks->elements()) {
        f.marks.push_back(mark.string());
      }
      for (const JsonField& mark : top["alloc_marks"].elements()) {
        f.alloc_marks.push_back(
            static_cast<std::int32_t>(mark.integer(-1, static_cast<std::int64_t>(f.marks.size()) - 1)));
      }
    }
    for (const JsonField& oom : top["ooms"].elements()) {
      OomFact o;
      o.device = oom["device"].string();
      o.bytes = oom["bytes"].count();
      if (const std::optional<JsonField> free = oom.find("device_free"); free && !free->is_null()) {
        o.device_free = free->count();
      }
      o.site = site_index(oom["site"], f.sites.size());
      f.ooms.push_back(std::move(o));
    }
    if (const std::optional<JsonField> conf = top.find("alloc_conf"); conf && !conf->is_null()) {
      f.alloc_conf = conf->string();
    }
    if (const auto it = doc.find("recorder"); it != doc.end() && it->is_object()) {
      f.recorder = *it;
    }
    return f;
  } catch (const InputError& e) {
    throw fail(e.what());
  }
}

}  // namespace memstress::doctor
