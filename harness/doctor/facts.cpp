#include "harness/doctor/facts.hpp"

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/json_input.hpp"
#include "harness/core/text_file.hpp"

namespace memstress::doctor {
namespace {

// The converter wrote this file moments ago, but it is still input: every field is checked.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  template <typename T>
  T get(const nlohmann::json& object, const char* key, const std::string& where) const {
    const auto it = object.find(key);
    if (it == object.end()) {
      fail(where, fmt::format("no '{}'", key));
    }
    try {
      return it->get<T>();
    } catch (const nlohmann::json::exception&) {
      fail(where, fmt::format("'{}' has the wrong type ({})", key, it->type_name()));
    }
  }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("{}: the converter's facts: {}: {}", name_, where, what));
  }

 private:
  std::string name_;
};

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

SnapshotFacts read_facts(const std::filesystem::path& path, const std::string& name) {
  const Reader r(name);
  const std::optional<std::string> text = read_text_file(path);
  if (!text) {
    r.fail("file", fmt::format("cannot read {}", path.string()));
  }
  nlohmann::json doc;
  try {
    doc = parse_json_input(*text);  // Note [Bounded JSON input]
  } catch (const InputError& e) {
    r.fail("file", e.what());
  }
  if (!doc.is_object() || doc.value("schema", "") != "memstress.snapshot-facts/1") {
    r.fail("file", "not a memstress.snapshot-facts/1 document");
  }
  SnapshotFacts f;
  f.source = r.get<std::string>(doc, "source", "top level");
  f.frames_recorded = r.get<bool>(doc, "frames_recorded", "top level");
  const auto sites = r.get<std::vector<nlohmann::json>>(doc, "sites", "top level");
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const std::string where = fmt::format("sites[{}]", i);
    Site s;
    s.where = r.get<std::string>(sites[i], "where", where);
    s.filename = r.get<std::string>(sites[i], "filename", where);
    s.line = r.get<std::int64_t>(sites[i], "line", where);
    s.function = r.get<std::string>(sites[i], "function", where);
    s.user_code = r.get<bool>(sites[i], "user_code", where);
    s.stack = r.get<std::vector<std::string>>(sites[i], "stack", where);
    f.sites.push_back(std::move(s));
  }
  f.alloc_sites = r.get<std::vector<std::int32_t>>(doc, "alloc_sites", "top level");
  for (const std::int32_t s : f.alloc_sites) {
    if (s < kBeforeRecording || s >= static_cast<std::int64_t>(f.sites.size())) {
      r.fail("alloc_sites", fmt::format("site {} is not one of the {} sites", s, f.sites.size()));
    }
  }
  if (doc.contains("segment_addresses")) {
    f.segment_addresses = r.get<std::vector<std::uint64_t>>(doc, "segment_addresses", "top level");
  }
  const auto ooms = r.get<std::vector<nlohmann::json>>(doc, "ooms", "top level");
  for (std::size_t i = 0; i < ooms.size(); ++i) {
    const std::string where = fmt::format("ooms[{}]", i);
    OomFact o;
    o.device = r.get<std::string>(ooms[i], "device", where);
    o.bytes = r.get<std::uint64_t>(ooms[i], "bytes", where);
    if (const auto it = ooms[i].find("device_free"); it != ooms[i].end() && !it->is_null()) {
      o.device_free = r.get<std::uint64_t>(ooms[i], "device_free", where);
    }
    o.site = r.get<std::int32_t>(ooms[i], "site", where);
    if (o.site < kBeforeRecording || o.site >= static_cast<std::int64_t>(f.sites.size())) {
      r.fail(where, fmt::format("site {} is not one of the {} sites", o.site, f.sites.size()));
    }
    f.ooms.push_back(std::move(o));
  }
  if (const auto it = doc.find("alloc_conf"); it != doc.end() && !it->is_null()) {
    f.alloc_conf = r.get<std::string>(doc, "alloc_conf", "top level");
  }
  if (const auto it = doc.find("recorder"); it != doc.end() && it->is_object()) {
    f.recorder = *it;
  }
  return f;
}

}  // namespace memstress::doctor
