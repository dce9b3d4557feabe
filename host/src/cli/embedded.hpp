// Files carried inside the binary, generated at build time by
// cmake/EmbedFiles.cmake (gpusweep_embed_files).
#pragma once

#include <vector>

namespace gpusweep::host {

struct EmbeddedFile {
  const char* name;  // file name, without folders
  const char* text;  // exact contents
};

// sdk/template/*.in: the project `gpusweep new-plugin` writes.
const std::vector<EmbeddedFile>& plugin_templates();

}  // namespace gpusweep::host
