// The kinds of option, and the options several commands share, declared
// once; see options.hpp.
#include "cli/options.hpp"

#include "support/format.hpp"

#include <sstream>

namespace gpusweep::host {

namespace {

// A default as the user would write it: 300, 0.001, 2.
std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

Option make(std::string name, OptionKind kind, std::string value, std::string help,
            std::string default_text) {
  Option o;
  o.name = std::move(name);
  o.kind = kind;
  o.value = std::move(value);
  o.help = std::move(help);
  o.default_text = std::move(default_text);
  return o;
}

}  // namespace

std::string Option::described() const {
  return help + (kind == OptionKind::texts ? " (repeatable)" : "") +
         (is_required ? " (required)" : "");
}

Option Option::required() const {
  Option o = *this;
  o.is_required = true;
  return o;
}

Option Option::with_short(char c) const {
  Option o = *this;
  o.short_name = c;
  return o;
}

Option flag(std::string name, std::string help) {
  return make(std::move(name), OptionKind::flag, "", std::move(help), "");
}
Option text(std::string name, std::string value, std::string help, std::string default_text) {
  return make(std::move(name), OptionKind::text, std::move(value), std::move(help),
              std::move(default_text));
}
Option texts(std::string name, std::string value, std::string help) {
  return make(std::move(name), OptionKind::texts, std::move(value), std::move(help), "");
}
Option number(std::string name, std::string value, std::string help, double default_value) {
  return make(std::move(name), OptionKind::number, std::move(value), std::move(help),
              number_text(default_value));
}
Option number(std::string name, std::string value, std::string help) {
  return make(std::move(name), OptionKind::number, std::move(value), std::move(help), "");
}
Option integer(std::string name, std::string value, std::string help, int64_t default_value) {
  return make(std::move(name), OptionKind::integer, std::move(value), std::move(help),
              std::to_string(default_value));
}
Option integer(std::string name, std::string value, std::string help) {
  return make(std::move(name), OptionKind::integer, std::move(value), std::move(help), "");
}
Option percent(std::string name, std::string help, double default_fraction) {
  return make(std::move(name), OptionKind::text, "PCT", std::move(help),
              number_text(default_fraction * 100) + "%");
}

Option db_option() { return text("db", "FILE", "results database (SQLite)", "gpusweep.db"); }

Option sweep_name_option() { return text("sweep", "NAME", "sweep name (default: the latest run)"); }

Option plugin_path_option() {
  return texts("plugin-path", "DIR",
               "extra folder to search for gpusweep_<name>.so plugins, before "
               "GPUSWEEP_PLUGIN_PATH");
}

Option set_option() {
  return texts("set", "KEY=VALUE",
               "override a setting: key=value (base), measure.key=value (protocol)");
}

Option gpus_option() {
  return text("gpus", "LIST",
              "GPUs for the workers, one each: positions among the visible GPUs (0,1 or "
              "0-3) or all (the default when --jobs > 1 runs trials on GPUs); each worker "
              "sees only its own, as cuda:0 (CUDA_VISIBLE_DEVICES)");
}

Option allow_plugin_change_option() {
  return flag("allow-plugin-change",
              "continue a run although the plugin file differs from the build its trials "
              "ran (another hash): each trial records the build that ran it "
              "(trials.run_plugin_hash)");
}

Option fresh_workers_option() {
  return flag("fresh-workers",
              "start each trial's worker as a new process that loads the plugin itself, "
              "instead of forking it from a process that loaded the plugin once (the default)");
}

Option format_option(const std::vector<OutputFormat>& offered) {
  std::vector<std::string> names;
  for (OutputFormat f : offered) names.emplace_back(output_format_name(f));
  return text("format", "FORMAT", name_list(names), names.front());
}

std::vector<Option> with_run_options(std::vector<Option> own, const std::string& resume_help) {
  own.insert(own.end(), {db_option(), flag("resume", resume_help), fresh_workers_option(),
                         set_option(), plugin_path_option()});
  return own;
}

}  // namespace gpusweep::host
