// A file carried inside the binary (cmake/EmbedFiles.cmake writes them).
#pragma once

namespace gpusweep::host {

struct EmbeddedFile {
  const char* name;  // file name, without folders
  const char* text;  // exact contents
};

}  // namespace gpusweep::host
