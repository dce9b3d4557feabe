// Plugin discovery that cannot be planted: plugin files and folders that
// another user could change are not loaded, with the fix.
#include "plugin_host/registry.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

bool found(const Registry& r, const std::string& name) {
  for (const auto& p : r.list()) {
    if (p.name == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a plugin file or folder another user could change is not loaded", "[plugins]") {
  gpusweep::test::TempDir d("gpusweep_trust");
  const std::string so = d.path + "/gpusweep_planted.so";
  std::ofstream(so) << "not really a plugin";
  REQUIRE(::chmod(so.c_str(), 0644) == 0);
  CHECK_FALSE(trust_problem(so));
  CHECK_FALSE(trust_problem(d.path));  // mkdtemp's 0700
  CHECK(found(Registry({d.path}), "planted"));

  REQUIRE(::chmod(so.c_str(), 0664) == 0);
  if (::geteuid() == 0) {
    // Group write by the owner's private group (root:root here, as alice:alice
    // under umask 002) lets no one else in: accepted, as Debian's ssh does.
    REQUIRE(::chown(so.c_str(), 0, 0) == 0);
    CHECK_FALSE(trust_problem(so));
    // By a shared group (users, gid 100): refused, saying how to fix it.
    REQUIRE(::chown(so.c_str(), 0, 100) == 0);
    REQUIRE(trust_problem(so));
    CHECK_THAT(*trust_problem(so), Contains("writable by group") && Contains("(mode 0664)") &&
                                       Contains("chmod go-w '" + so + "'"));
    CHECK_FALSE(found(Registry({d.path}), "planted"));
    CHECK_THROWS_WITH(Registry({d.path}).describe("planted"),
                      Contains("unknown workload 'planted'") &&
                          Contains("plugin " + so + " is not loaded: it is writable by group"));
  } else {
    WARN("not root: the group-write half of this test needs chgrp to a shared group");
  }

  REQUIRE(::chmod(so.c_str(), 0646) == 0);
  CHECK_THAT(*trust_problem(so), Contains("writable by every user"));
  REQUIRE(::chmod(so.c_str(), 0644) == 0);

  // A folder anyone can write to: a plugin could be added there, so none of
  // its plugins is loaded (the sticky bit does not help: files can be added).
  REQUIRE(::chmod(d.path.c_str(), 01777) == 0);
  CHECK_THAT(*trust_problem(d.path), Contains("writable by every user (mode 1777)"));
  CHECK_FALSE(found(Registry({d.path}), "planted"));
  REQUIRE(::chmod(d.path.c_str(), 0700) == 0);
  CHECK(found(Registry({d.path}), "planted"));

  if (::geteuid() != 0) {
    WARN("not root: the ownership half of this test needs chown");
    return;
  }
  REQUIRE(::chown(so.c_str(), 65534, 65534) == 0);  // nobody
  REQUIRE(trust_problem(so));
  CHECK_THAT(*trust_problem(so),
             Contains("it is owned by ") && Contains("not by you, root or gpusweep's owner"));
  CHECK_FALSE(found(Registry({d.path}), "planted"));
}
