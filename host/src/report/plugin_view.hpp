// `gpusweep plugins NAME`: one plugin's manifest as text.
#pragma once

#include "plugin_host/plugin_check.hpp"
#include "plugin_host/registry.hpp"
#include "plugin_host/survey.hpp"
#include "report/output.hpp"
#include "spec/manifest.hpp"

#include <string>

namespace gpusweep::host {

// Its description, file and ABI, throughput unit, quality metric, runtime,
// then its knobs and the common settings it accepts, each with its type,
// default, allowed values and description.
std::string plugin_text(const PluginManifest& m, const std::string& file, const std::string& abi,
                        const Json& runtime);

// `plugins NAME --format json`: the same as one document (the manifest as the
// plugin wrote it, with file, abi and runtime).
Json plugin_json(const PluginInfo& info);

// `plugins`: one row per plugin on the path (those that do not load, with
// why), as a table, csv, json or md.
std::string plugin_list(const PluginSurvey& survey, OutputFormat format);

// `plugins --check`: one line per item, fixes indented below, then the tally.
std::string plugin_check_text(const PluginCheckReport& report);

// `plugins --check --format json`: {path, config, problems, notes, items:
// [{level, what, fix}]}.
Json plugin_check_json(const PluginCheckReport& report);

}  // namespace gpusweep::host
