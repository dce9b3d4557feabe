// `plugins NAME`'s view; see plugin_view.hpp.
#include "report/plugin_view.hpp"

#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

std::string allowed(const ParamSpec& p) {
  std::string out;
  for (const auto& c : p.choices) out += (out.empty() ? "" : ", ") + value_text(c);
  if (!out.empty()) return out;
  auto num = [&p](double v) {
    return p.type == ParamType::integer ? std::to_string(static_cast<long long>(v))
                                        : Json(v).dump();
  };
  if (p.min && p.max) return num(*p.min) + " .. " + num(*p.max);
  if (p.min) return ">= " + num(*p.min);
  if (p.max) return "<= " + num(*p.max);
  if (p.type == ParamType::json) return "any JSON value";
  return p.type == ParamType::boolean ? "true, false" : "any";
}

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
  // What a time-to-quality target (measure.target) may name, with ranges.
  std::string targets;
  for (const auto& name : m.target_metric_names()) {
    const auto info = m.target_metric(name);
    targets +=
        (targets.empty() ? "" : ", ") + name + " (" + (info->higher_is_better ? "max" : "min");
    if (info->min || info->max) {
      targets += ", " + (info->min ? number_text(*info->min) : std::string("-inf")) + " to " +
                 (info->max ? number_text(*info->max) : std::string("inf"));
    }
    targets += ")";
  }
  if (!targets.empty()) out << "targets:    " << targets << " (measure.target)\n";
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

Json plugin_json(const PluginInfo& info) {
  Json j = info.manifest.raw;
  j["file"] = info.file.path;
  j["abi"] = info.abi;
  j["runtime"] = info.runtime;
  return j;
}

std::string plugin_list(const PluginSurvey& survey, OutputFormat format) {
  std::vector<Json> rows;
  for (const Json& r : survey.rows) {
    const bool loads = r.value("loads", false);
    rows.push_back({{"name", r.at("name")},
                    {"version", loads ? r.at("version") : Json()},
                    {"unit", loads ? r.at("unit") : Json()},
                    {"description", loads ? r.at("description").get<std::string>()
                                          : "does not load: " + r.value("error", std::string())},
                    {"file", r.at("file")},
                    {"loads", loads}});
  }
  const bool table = format == OutputFormat::table;
  std::vector<Column> cols = {{"name", "name", false, {}},
                              {"version", "version", false, {}},
                              {"unit", "unit", false, {}},
                              {"description", "description", false,
                               [table](const Json& r) {
                                 const std::string d = r["description"].get<std::string>();
                                 return table && r["loads"].get<bool>() ? truncate(d, 60) : d;
                               }},
                              {"file", "file", false, {}}};
  if (!table) cols.push_back({"loads", "loads", false, {}});
  return render(rows, cols, format);
}

std::string plugin_check_text(const PluginCheckReport& r) {
  std::ostringstream os;
  os << "checking " << r.path << "\n";
  for (const auto& item : r.items) {
    const char* mark = item.level == CheckItem::Level::ok     ? "ok     "
                       : item.level == CheckItem::Level::note ? "note   "
                                                              : "PROBLEM";
    os << "  " << mark << "  " << item.what << "\n";
    if (!item.fix.empty()) os << "           fix: " << item.fix << "\n";
  }
  if (!r.config.is_null()) {
    std::string small;
    if (r.config.contains("batch_size")) {
      small = " (batch_size=" + r.config["batch_size"].dump() + ")";
    }
    os << "smoke run config: defaults" << small << "\n";
  }
  const int problems = r.problems();
  const int notes = r.count(CheckItem::Level::note);
  if (problems == 0) {
    os << "no problems found" << (notes > 0 ? " (" + std::to_string(notes) + " notes)" : "")
       << "\n";
  } else {
    os << problems << (problems == 1 ? " problem" : " problems") << " found\n";
  }
  return os.str();
}

Json plugin_check_json(const PluginCheckReport& r) {
  Json items = Json::array();
  for (const auto& item : r.items) {
    const char* level = item.level == CheckItem::Level::ok     ? "ok"
                        : item.level == CheckItem::Level::note ? "note"
                                                               : "problem";
    items.push_back({{"level", level},
                     {"what", item.what},
                     {"fix", item.fix.empty() ? Json() : Json(item.fix)}});
  }
  return {{"path", r.path},
          {"config", r.config},
          {"problems", r.problems()},
          {"notes", r.count(CheckItem::Level::note)},
          {"items", items}};
}

}  // namespace gpusweep::host
