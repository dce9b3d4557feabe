// `gpusweep plugins NAME`: one plugin's manifest as text.
#pragma once

#include "model/manifest.hpp"

#include <string>

namespace gpusweep::host {

// Its description, file and ABI, throughput unit, quality metric, runtime,
// then its knobs and the common settings it accepts, each with its type,
// default, allowed values and description.
std::string plugin_text(const PluginManifest& m, const std::string& file, const std::string& abi,
                        const Json& runtime);

}  // namespace gpusweep::host
