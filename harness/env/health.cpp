// The health figures and injected health readings (see health.hpp); NVML's reading is in health_nvml.cpp.

#include "harness/env/health.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "harness/core/error.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_input.hpp"
#include "harness/core/planted_faults.hpp"
#include "harness/core/text_file.hpp"

namespace memstress {
namespace {

constexpr std::array kFigures = {
    HealthFigure{"ecc.volatile.uncorrected", "count", true},
    HealthFigure{"ecc.volatile.corrected", "count", true},
    HealthFigure{"ecc.aggregate.uncorrected", "count", true},
    HealthFigure{"ecc.aggregate.corrected", "count", true},
    HealthFigure{"ecc.enabled", "flag", false},
    HealthFigure{"retired_pages.single_bit", "count", true},
    HealthFigure{"retired_pages.double_bit", "count", true},
    HealthFigure{"retired_pages.pending", "flag", true},
    HealthFigure{"remapped_rows.correctable", "count", true},
    HealthFigure{"remapped_rows.uncorrectable", "count", true},
    HealthFigure{"remapped_rows.pending", "flag", true},
    HealthFigure{"remapped_rows.failed", "flag", true},
    HealthFigure{"xid.events", "count", true},
    HealthFigure{"pcie.gen", "gen", false},
    HealthFigure{"pcie.gen_max", "gen", false},
    HealthFigure{"pcie.gen_below_max", "gen", true},
    HealthFigure{"pcie.width", "lanes", false},
    HealthFigure{"pcie.width_max", "lanes", false},
    HealthFigure{"pcie.width_below_max", "lanes", true},
    HealthFigure{"nvlink.active_links", "links", false},
    HealthFigure{"nvlink.links_down", "links", true},
    HealthFigure{"nvlink.errors", "count", true},
    HealthFigure{"nvlink.corrected", "count", true},
    HealthFigure{"nvlink.corrected_per_s", "count/s", true},
    HealthFigure{"throttle.power_ms", "ms", true},
    HealthFigure{"throttle.thermal_ms", "ms", true},
    HealthFigure{"throttle.sync_boost_ms", "ms", true},
    HealthFigure{"throttle.board_limit_ms", "ms", true},
    HealthFigure{"throttle.reliability_ms", "ms", true},
    HealthFigure{"throttle.hw_thermal_ms", "ms", true},
    HealthFigure{"throttle.hw_power_brake_ms", "ms", true},
    HealthFigure{"clocks.hw_slowdown", "flag", true},
    HealthFigure{"clocks.sw_thermal_slowdown", "flag", true},
    HealthFigure{"processes.others", "count", true},
};

// What NVIDIA's XID catalog says of the codes an operator meets most (docs.nvidia.com, "XID Errors").
std::string_view xid_meaning(unsigned long long xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception";
    case 31:
      return "GPU memory page fault";
    case 43:
      return "GPU stopped processing";
    case 45:
      return "preemptive cleanup, after earlier errors";
    case 48:
      return "double-bit ECC error";
    case 61:
      return "internal micro-controller breakpoint or warning";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remap recorded";
    case 64:
      return "ECC page retirement or row remap failed";
    case 74:
      return "NVLink error";
    case 79:
      return "GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error";
    case 95:
      return "uncontained ECC error";
    case 119:
      return "GSP RPC timeout";
    case 120:
      return "GSP error";
    default:
      return {};
  }
}

bool known(std::string_view name) {
  return std::any_of(kFigures.begin(), kFigures.end(), [&](const HealthFigure& f) { return f.name == name; });
}

class InjectedHealth final : public HealthWatch {
 public:
  explicit InjectedHealth(GpuHealth health) : health_(std::move(health)) {}
  [[nodiscard]] std::string unavailable() const override { return {}; }
  [[nodiscard]] GpuHealth read() override { return health_; }
  [[nodiscard]] std::vector<std::pair<std::string, double>> throttle_ms() override {
    ++reads_;
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [name, value] : health_.figures) {
      if (name.starts_with("throttle.")) {
        out.emplace_back(name, value * static_cast<double>(reads_));
      }
    }
    return out;
  }

 private:
  GpuHealth health_;
  int reads_ = 0;
};

// A real GPU's readings with injected figures laid over them: an injected figure replaces NVML's (or
// stands where NVML had none), and the injected notes (XID events) are added.
class OverlaidHealth final : public HealthWatch {
 public:
  OverlaidHealth(std::unique_ptr<HealthWatch> real, std::unique_ptr<HealthWatch> injected)
      : real_(std::move(real)), injected_(std::move(injected)) {}
  [[nodiscard]] std::string unavailable() const override { return real_->unavailable(); }
  [[nodiscard]] GpuHealth read() override {
    GpuHealth out = real_->read();
    const GpuHealth over = injected_->read();
    for (const auto& figure : over.figures) {
      overlay(out.figures, figure.first, figure.second);
      std::erase_if(out.not_measured, [&](const auto& m) { return m.first == figure.first; });
    }
    out.notes.insert(out.notes.end(), over.notes.begin(), over.notes.end());
    return out;
  }
  [[nodiscard]] std::vector<std::pair<std::string, double>> throttle_ms() override {
    std::vector<std::pair<std::string, double>> out = real_->throttle_ms();
    for (const auto& [name, value] : injected_->throttle_ms()) {
      overlay(out, name, value);
    }
    return out;
  }

 private:
  static void overlay(std::vector<std::pair<std::string, double>>& figures, const std::string& name,
                      double value) {
    const auto it =
        std::find_if(figures.begin(), figures.end(), [&](const auto& f) { return f.first == name; });
    if (it != figures.end()) {
      it->second = value;
    } else {
      figures.emplace_back(name, value);
    }
  }

  std::unique_ptr<HealthWatch> real_;
  std::unique_ptr<HealthWatch> injected_;
};

GpuHealth parse_injected(const JsonField& root) {
  std::vector<std::pair<std::string, double>> given;
  for (const auto& [name, value] : root["figures"].members()) {
    if (!known(name)) {
      throw InputError(fmt::format("figures: unknown figure `{}` (see harness/env/health.cpp)", name));
    }
    const double v = value.real();
    if (!(v >= 0) || !std::isfinite(v)) {
      throw InputError(fmt::format("figures.{}: must be a number of 0 or more", name));
    }
    given.emplace_back(name, v);
  }
  GpuHealth h;
  if (const std::optional<JsonField> not_measured = root.find("not_measured")) {
    for (const auto& [name, why] : not_measured->members()) {
      if (!known(name)) {
        throw InputError(fmt::format("not_measured: unknown figure `{}`", name));
      }
      h.not_measured.emplace_back(name, why.string());
    }
  }
  double xids = 0;
  if (const std::optional<JsonField> xid = root.find("xid")) {
    for (const JsonField& code : xid->elements()) {
      h.notes.push_back(xid_note(static_cast<unsigned long long>(code.integer(0, 1'000'000))));
      xids += 1;
    }
  }
  for (const HealthFigure& f : kFigures) {  // in the figures' order, whatever the file's
    const auto it =
        std::find_if(given.begin(), given.end(), [&](const auto& g) { return g.first == f.name; });
    if (it != given.end()) {
      h.figures.emplace_back(it->first, it->second + (f.name == "xid.events" ? xids : 0));
    } else if (f.name == "xid.events" && root.find("xid")) {
      h.figures.emplace_back(f.name, xids);
    }
  }
  return h;
}

}  // namespace

std::span<const HealthFigure> health_figures() noexcept {
  return kFigures;
}

std::string xid_note(unsigned long long xid) {
  const std::string_view meaning = xid_meaning(xid);
  return meaning.empty() ? fmt::format("xid.events: XID {} during the run", xid)
                         : fmt::format("xid.events: XID {} during the run ({})", xid, meaning);
}

std::unique_ptr<HealthWatch> injected_health_watch(std::string_view json, const std::string& name) {
  try {
    const nlohmann::json document = parse_json_input(json);
    return std::make_unique<InjectedHealth>(parse_injected(JsonField(document)));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
}

std::unique_ptr<HealthWatch> run_health_watch(bool cuda_gpu, const std::string& uuid) {
  const char* file = std::getenv("MEMSTRESS_INJECT_HEALTH");  // NOLINT(concurrency-mt-unsafe): before threads
  const bool inject = file != nullptr && *file != '\0';
  if (cuda_gpu) {
    std::unique_ptr<HealthWatch> nvml = nvml_health_watch("", uuid);
    // Test-only builds lay the injected figures over the real GPU's (Note [Planted faults]).
    return inject && fault_hooks_built()
               ? std::make_unique<OverlaidHealth>(std::move(nvml),
                                                  injected_health_watch(std::filesystem::path(file)))
               : std::move(nvml);
  }
  return inject ? injected_health_watch(std::filesystem::path(file)) : nullptr;
}

std::unique_ptr<HealthWatch> injected_health_watch(const std::filesystem::path& file) {
  const std::string name = fmt::format("MEMSTRESS_INJECT_HEALTH '{}'", file.string());
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw InputError(fmt::format("{}: is a directory, not a health reading (a JSON file)", name));
  }
  const std::optional<std::string> text = read_text_file(file);
  if (!text) {
    throw InputError(fmt::format("{}: cannot be read", name));
  }
  return injected_health_watch(*text, name);
}

}  // namespace memstress
