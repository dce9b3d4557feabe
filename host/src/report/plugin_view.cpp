// `plugins NAME`'s view; see plugin_view.hpp.
#include "report/plugin_view.hpp"

#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

std::string allowed(const ParamSpec& p) {
  std::string out;
  for (const auto& c : p.choices)
    out += (out.empty() ? "" : ", ") + (c.is_string() ? c.get<std::string>() : c.dump());
  if (!out.empty()) return out;
  auto num = [&p](double v) {
    return p.type == ParamType::integer ? std::to_string(static_cast<long long>(v))
                                        : Json(v).dump();
  };
  if (p.min && p.max) return num(*p.min) + " .. " + num(*p.max);
  if (p.min) return ">= " + num(*p.min);
  if (p.max) return "<= " + num(*p.max);
  return p.type == ParamType::boolean ? "true, false" : "any";
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string plugin_text(const PluginManifest& m, const std::string& file, const std::string& abi,
                        const Json& runtime) {
  std::ostringstream out;
  out << wrap(m.name + " " + m.version + ": " + m.description, 100) << "\n"
      << "file:       " << file << " (ABI " << abi << ")\n"
      << "throughput: " << m.unit << "/s"
      << (m.secondary_unit.empty() ? "" : " (and " + m.secondary_unit + "/s)") << "\n";
  if (!m.quality_metric.empty()) {
    out << "quality:    " << m.quality_metric << " (" << (m.higher_is_better ? "higher" : "lower")
        << " is better" << (m.quality_reference.empty() ? "" : "; reference " + m.quality_reference)
        << ")"
        << "\n";
    if (!m.quality_description.empty()) out << wrap(m.quality_description, 100) << "\n";
  }
  if (!runtime.empty()) out << "runtime:    " << runtime.dump() << "\n";
  for (bool common : {false, true}) {
    Table t({"parameter", "type", "default", "allowed", "description"});
    for (const auto& p : m.params) {
      if (p.common != common) continue;
      const std::string note = p.applies ? "" : " [does not apply here: set, it skips the trial]";
      t.add_row({p.name, param_type_name(p.type), value_text(p.default_value), wrap(allowed(p), 24),
                 wrap(p.description + note, 64)});
    }
    if (t.rows() == 0) continue;
    out << "\n" << (common ? "common settings" : "workload knobs") << ":\n" << t.render();
  }
  return out.str();
}

}  // namespace gpusweep::host
