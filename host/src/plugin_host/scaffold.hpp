// `gpusweep new-plugin`'s project: a plugin's name checked, and the project
// written from the templates (sdk/template/*.in, carried in the binary).
#pragma once

#include "support/embedded_file.hpp"

#include <map>
#include <string>
#include <vector>

namespace gpusweep::host {

// Throws UsageError for a name that cannot be a plugin's (lower-case letters,
// digits and underscores, a letter first, at most 48 characters, no class
// name the SDK already defines), with a suggestion.
void validate_plugin_name(const std::string& name);

// "my_model" -> "MyModel", the workload's class name.
std::string class_name(const std::string& name);

// Writes the project into dir (created; it must not exist or be empty): each
// template with {{name}}, {{class}} and extra_vars filled in. Returns the
// files written. Throws UsageError for a dir in the way, Error when writing fails.
std::vector<std::string> write_plugin_project(const std::string& name, const std::string& dir,
                                              const std::vector<EmbeddedFile>& templates,
                                              const std::map<std::string, std::string>& extra_vars);

}  // namespace gpusweep::host
