// `gpusweep plugins [NAME]`: the plugins on the plugin path, or one manifest;
// `gpusweep plugins --check FILE`: validates one plugin thoroughly.
#include "cli/cli.hpp"
#include "plugins/plugin_check.hpp"
#include "plugins/registry.hpp"
#include "report/output.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

std::string allowed(const ParamSpec& p) {
  std::string out;
  for (const auto& c : p.choices)
    out += (out.empty() ? "" : ", ") + (c.is_string() ? c.get<std::string>() : c.dump());
  if (!out.empty()) return out;
  auto num = [&p](double v) {
    return p.type == "int" ? std::to_string(static_cast<long long>(v)) : Json(v).dump();
  };
  if (p.min && p.max) return num(*p.min) + " .. " + num(*p.max);
  if (p.min) return ">= " + num(*p.min);
  if (p.max) return "<= " + num(*p.max);
  return p.type == "bool" ? "true, false" : "any";
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void describe(const PluginInfo& info) {
  const auto& m = info.manifest;
  std::cout << wrap(m.name + " " + m.version + ": " + m.description, 100) << "\n"
            << "file:       " << info.file.path << " (ABI " << info.abi << ")\n"
            << "throughput: " << m.unit << "/s"
            << (m.secondary_unit.empty() ? "" : " (and " + m.secondary_unit + "/s)") << "\n";
  if (!m.quality_metric.empty()) {
    std::cout << "quality:    " << m.quality_metric << " ("
              << (m.higher_is_better ? "higher" : "lower") << " is better"
              << (m.quality_reference.empty() ? "" : "; reference " + m.quality_reference) << ")"
              << "\n";
    if (!m.quality_description.empty()) std::cout << wrap(m.quality_description, 100) << "\n";
  }
  if (!info.runtime.empty()) std::cout << "runtime:    " << info.runtime.dump() << "\n";
  for (bool common : {false, true}) {
    Table t({"parameter", "type", "default", "allowed", "description"});
    for (const auto& p : m.params) {
      if (p.common != common) continue;
      const std::string note = p.applies ? "" : " [does not apply here: set, it skips the trial]";
      t.add_row({p.name, p.type, value_text(p.default_value), wrap(allowed(p), 24),
                 wrap(p.description + note, 64)});
    }
    if (t.rows() == 0) continue;
    std::cout << "\n" << (common ? "common settings" : "workload knobs") << ":\n" << t.render();
  }
}

// --check takes a file, or the name of a plugin on the plugin path.
std::string check_target(const std::string& arg, const Registry& registry) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec) || arg.find('/') != std::string::npos ||
      (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".so") == 0)) {
    return arg;
  }
  if (auto f = registry.find(arg)) return f->path;
  registry.describe(arg);  // throws the unknown-workload error with its did-you-mean
  return arg;
}

// The plugins on the path, one row each (those that do not load, with why);
// exit code 1 when one does not load or none is found.
int list_plugins(const Registry& registry, OutputFormat format) {
  std::vector<Json> rows;
  int broken = 0;
  for (const auto& f : registry.list()) {
    try {
      const auto info = registry.describe_file(f);
      rows.push_back({{"name", f.name},
                      {"version", info.manifest.version},
                      {"unit", info.manifest.unit},
                      {"description", info.manifest.description},
                      {"file", f.path},
                      {"loads", true}});
    } catch (const PluginError& e) {
      ++broken;
      rows.push_back({{"name", f.name},
                      {"version", nullptr},
                      {"unit", nullptr},
                      {"description", "does not load: " + e.reason()},
                      {"file", f.path},
                      {"loads", false}});
    }
  }
  if (rows.empty()) {
    std::string dirs;
    for (const auto& d : registry.search_path()) dirs += "\n  " + d;
    std::cout << "no plugins found; searched:" << dirs << "\n";
    return 1;
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
  std::cout << render(rows, cols, format);
  return broken == 0 ? 0 : 1;
}

}  // namespace

int cmd_plugins(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>(), "plugin to describe")(
      "format", po::value<std::string>()->default_value("table"),
      "table, csv, json or md (the list)")(
      "check", po::value<std::string>()->value_name("FILE"),
      "validate one plugin (a gpusweep_<name>.so file, or a name on the plugin path): ABI, "
      "manifest schema, and a create/step/evaluate/destroy smoke run with the smallest config, "
      "in worker processes; exit code 1 when problems are found")(
      "steps", po::value<int64_t>()->default_value(5), "steps of the --check smoke run")(
      "timeout-s", po::value<double>()->default_value(300),
      "--check: give up on a worker after this many seconds");
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p = parse_command("plugins", "[NAME] [--plugin-path DIR ...] | --check FILE",
                         "Lists the workload plugins found on the plugin path, or prints one\n"
                         "plugin's manifest: its settings, their types, defaults and ranges.\n"
                         "With --check, validates one plugin file and prints every problem\n"
                         "with its fix (docs/writing-plugins.md, \"Testing a plugin\").",
                         o, pos, args);
  if (p.help) return 0;
  Registry registry(plugin_paths(p.vm));
  if (p.vm.count("check") != 0U) {
    if (p.vm.count("name") != 0U) {
      throw UsageError("plugins: give either NAME or --check FILE, not both");
    }
    const auto steps = p.vm["steps"].as<int64_t>();
    const auto timeout = p.vm["timeout-s"].as<double>();
    if (steps < 1 || steps > 100000) throw UsageError("plugins --steps: must be in 1..100000");
    if (!(timeout > 0)) throw UsageError("plugins --timeout-s: must be positive");
    const CheckReport report =
        check_plugin(check_target(p.vm["check"].as<std::string>(), registry), steps, timeout);
    std::cout << render_check(report);
    return report.problems() == 0 ? 0 : 1;
  }
  if (p.vm.count("name") != 0U) {
    describe(registry.describe(p.vm["name"].as<std::string>()));
    return 0;
  }
  return list_plugins(registry, parse_output_format(p.vm["format"].as<std::string>()));
}

}  // namespace gpusweep::host
