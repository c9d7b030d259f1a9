// A profile written back as YAML (`accept --train --write`): what parse_profile reads, key for key.

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/accept/profile.hpp"

namespace memstress {

std::string to_yaml(const Profile& p) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "gpu" << YAML::Value
      << p.gpu;
  if (!p.description.empty()) {
    out << YAML::Key << "description" << YAML::Value << YAML::Literal << p.description;
  }
  out << YAML::Key << "runs" << YAML::Value << YAML::BeginSeq;
  for (const ProfileRun& r : p.runs) {
    out << YAML::BeginMap << YAML::Key << "workload" << YAML::Value << r.workload;
    if (!r.params.empty()) {
      out << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : r.params) {
        out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
      }
      out << YAML::EndMap;
    }
    if (r.min_ranks != 1) {
      out << YAML::Key << "min_ranks" << YAML::Value << r.min_ranks;
    }
    if (r.in_turn) {
      out << YAML::Key << "in_turn" << YAML::Value << true;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "checks" << YAML::Value << YAML::BeginSeq;
  for (const AcceptCheck& c : p.checks) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name << YAML::Key << "workload"
        << YAML::Value << c.workload;
    if (!c.where.empty()) {
      out << YAML::Key << "where" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : c.where) {
        out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
      }
      out << YAML::EndMap;
    }
    out << YAML::Key << "metric" << YAML::Value << c.metric;
    if (c.golden) {
      out << YAML::Key << "golden" << YAML::Value << fmt::format("{:.6g}", *c.golden) << YAML::Key << "factor"
          << YAML::Value << c.factor;
    } else if (!c.min && !c.max && !c.spread) {
      out << YAML::Key << "golden" << YAML::Value << YAML::Null;  // to be trained
    }
    if (c.min) {
      out << YAML::Key << "min" << YAML::Value << fmt::format("{:.6g}", *c.min);
    }
    if (c.max) {
      out << YAML::Key << "max" << YAML::Value << fmt::format("{:.6g}", *c.max);
    }
    if (c.spread) {
      out << YAML::Key << "spread" << YAML::Value << fmt::format("{:.6g}", *c.spread);
    }
    if (c.min_ranks != 1) {
      out << YAML::Key << "min_ranks" << YAML::Value << c.min_ranks;
    }
    if (c.per_host) {
      out << YAML::Key << "per_host" << YAML::Value << true;
    }
    if (!c.source.empty()) {
      out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << c.source;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace memstress
