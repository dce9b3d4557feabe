// The page `gpusweep serve` serves, carried inside the binary
// (cmake/EmbedFiles.cmake writes it from serve/page.html).
#pragma once

#include "support/embedded_file.hpp"

#include <vector>

namespace gpusweep::host {

// page.html, the one file.
const std::vector<EmbeddedFile>& serve_files();

}  // namespace gpusweep::host
