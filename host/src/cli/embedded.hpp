// Files carried inside the binary, generated at build time by
// cmake/EmbedFiles.cmake (gpusweep_embed_files).
#pragma once

#include "support/embedded_file.hpp"

#include <vector>

namespace gpusweep::host {

// sdk/template/*.in: the project `gpusweep new-plugin` writes.
const std::vector<EmbeddedFile>& plugin_templates();

// sdk/template/python/*.in: the Python workload `new-plugin --python` writes.
const std::vector<EmbeddedFile>& python_templates();

}  // namespace gpusweep::host
