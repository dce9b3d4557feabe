// A scratch folder for a unit test, removed with everything in it.
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace gpusweep::test {

struct TempDir {
  std::string path;
  // prefix: the folder's name before mkdtemp's random part.
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
};

}  // namespace gpusweep::test
