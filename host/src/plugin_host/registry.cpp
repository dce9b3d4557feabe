// Plugin discovery and description; see registry.hpp.
#include "plugin_host/registry.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"

#include <gpusweep/module_spec.hpp>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "protocol/worker_args.hpp"
#include "spec/hashing.hpp"
#include "support/capture.hpp"
#include "support/error.hpp"
#include "support/spawn.hpp"
#include "support/version.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "gpusweep_";
constexpr const char* kSuffix = ".so";

// True when exe is the binary in this build's tree (not an installed copy).
bool running_from_build_tree(const fs::path& exe) {
  if (std::string(build::build_dir()).empty()) return false;
  std::error_code ec;
  return fs::equivalent(exe.parent_path(), build::build_dir(), ec);
}

}  // namespace

Registry::Registry(std::vector<std::string> extra_dirs) : dirs_(std::move(extra_dirs)) {
  if (const char* env = std::getenv("GPUSWEEP_PLUGIN_PATH")) {
    std::stringstream ss(env);
    for (std::string d; std::getline(ss, d, ':');) {
      if (!d.empty()) dirs_.push_back(d);
    }
  }
  try {
    const fs::path exe = self_executable();
    // The build's plugins only for the build's binary: an installed gpusweep
    // sees exactly what is installed beside it.
    if (running_from_build_tree(exe) && !std::string(build::build_plugin_dir()).empty()) {
      dirs_.push_back(build::build_plugin_dir());
    }
    // The install folder only for a binary in an installed prefix's bin/: a
    // copy run from /tmp/x/ must not search /tmp/lib/..., which anyone can
    // create and plant a plugin in.
    if (exe.parent_path().filename() == "bin") {
      dirs_.push_back((exe.parent_path().parent_path() / build::install_plugin_dir()).string());
    }
  } catch (const Error&) {
    // Without /proc neither default folder is searched.
  }
}

namespace {

std::string user_name(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid)) return pw->pw_name;
  return "uid " + std::to_string(uid);
}

std::string group_name(gid_t gid) {
  if (const group* gr = ::getgrgid(gid)) return gr->gr_name;
  return "gid " + std::to_string(gid);
}

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Said once per path and process, on stderr.
void warn_refused(const std::string& what) {
  static std::set<std::string> warned;
  if (warned.insert(what).second) std::cerr << "warning: " << what << "\n";
}

// The owner of the gpusweep binary itself: whoever can replace it can run
// code as its users already (a central install owned by a software account).
// Read once per process.
std::optional<uid_t> binary_owner() {
  static const std::optional<uid_t> owner = []() -> std::optional<uid_t> {
    struct stat st {};
    if (::stat("/proc/self/exe", &st) != 0) return std::nullopt;
    return st.st_uid;
  }();
  return owner;
}

// True when `gid` is `owner`'s private group (as Debian's ssh judges group
// write): it bears the owner's name and no one else is in it, neither as a
// listed member nor by having it as primary group. Under umask 002 builds
// and installs are group-writable by such a group, which only the owner is in.
bool private_group_of(gid_t gid, uid_t owner) {
  const passwd* pw = ::getpwuid(owner);
  const group* gr = ::getgrgid(gid);
  if (pw == nullptr || gr == nullptr || std::string(gr->gr_name) != pw->pw_name) return false;
  const std::string owner_name = pw->pw_name;
  for (char** m = gr->gr_mem; m != nullptr && *m != nullptr; ++m) {
    if (owner_name != *m) return false;
  }
  ::setpwent();
  bool alone = true;
  while (const passwd* other = ::getpwent()) {
    if (other->pw_gid == gid && other->pw_uid != owner) {
      alone = false;
      break;
    }
  }
  ::endpwent();
  return alone;
}

}  // namespace

std::optional<std::string> trust_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const std::string quoted = "'" + path + "'";
  if (st.st_uid != 0 && st.st_uid != ::geteuid() && st.st_uid != binary_owner()) {
    return "it is owned by " + user_name(st.st_uid) +
           ", not by you, root or gpusweep's owner: they could put code there that gpusweep "
           "would run as you; copy it into a folder of your own";
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return "it is writable by every user (mode " + octal_mode(st.st_mode) +
           "): anyone could put code there that gpusweep would run; fix with: chmod go-w " + quoted;
  }
  if ((st.st_mode & S_IWGRP) != 0 && !private_group_of(st.st_gid, st.st_uid)) {
    return "it is writable by group " + group_name(st.st_gid) + " (mode " + octal_mode(st.st_mode) +
           "): its members could put code there that gpusweep would run; fix with: chmod go-w " +
           quoted;
  }
  return std::nullopt;
}

Registry::Scan Registry::scan() const {
  Scan out;
  std::set<std::string> seen;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    if (auto problem = trust_problem(dir)) {
      out.refused.push_back("plugin folder " + dir + " is not searched: " + *problem);
      warn_refused(out.refused.back());
      continue;
    }
    std::vector<PluginFile> here;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind(kPrefix, 0) != 0 || file.size() <= std::string(kPrefix).size() + 3 ||
          file.substr(file.size() - 3) != kSuffix) {
        continue;
      }
      const std::string name =
          file.substr(std::string(kPrefix).size(), file.size() - std::string(kPrefix).size() - 3);
      const std::string path = fs::absolute(entry.path()).string();
      if (auto problem = trust_problem(path)) {
        out.refused.push_back("plugin " + path + " is not loaded: " + *problem);
        warn_refused(out.refused.back());
        continue;
      }
      here.push_back({name, path});
    }
    std::sort(here.begin(), here.end(),
              [](const PluginFile& a, const PluginFile& b) { return a.name < b.name; });
    for (auto& p : here) {
      if (seen.insert(p.name).second) out.found.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<PluginFile> Registry::list() const { return scan().found; }

std::optional<PluginFile> Registry::find(const std::string& name) const {
  for (auto& p : list()) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

PluginInfo Registry::describe(const std::string& name, const Json& selection) const {
  // One look at the folders, for the plugin or for everything the error says.
  const Scan path = scan();
  std::vector<std::string> names;
  for (const auto& p : path.found) {
    if (p.name == name) return describe_file(p, selection);
    names.push_back(p.name);
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  std::string dirs;
  for (const auto& d : dirs_) dirs += (dirs.empty() ? "" : ":") + d;
  std::string hint;
  if (auto s = did_you_mean(name, names)) hint = "; did you mean '" + *s + "'?";
  std::string refused;
  for (const auto& r : path.refused) refused += "; " + r;
  throw UsageError("unknown workload '" + name + "'" + hint +
                   " (plugins found: " + (known.empty() ? "none" : known) + "; searched " + dirs +
                   "; add folders with --plugin-path or GPUSWEEP_PLUGIN_PATH)" + refused);
}

PluginInfo Registry::describe_file(const PluginFile& file, const Json& selection) const {
  WorkerArgs describe;
  describe.mode = WorkerMode::describe;
  describe.plugin_path = file.path;
  if (!selection.empty()) describe.config_json = selection.dump();
  const Captured c = run_worker_captured(describe, 120);
  std::optional<event::Loaded> loaded;
  std::string failure;
  std::string reason;
  for (const auto& e : event::parse(c.proto)) {
    if (const auto* l = std::get_if<event::Loaded>(&e)) loaded = *l;
    if (const auto* result = std::get_if<event::Result>(&e)) {
      failure = result->message.value_or("");
      reason = result->reason.value_or(failure);
    }
  }
  if (!loaded) {
    std::string why = failure;
    if (why.empty()) {
      why = c.timed_out ? "it did not answer within 120 s"
            : WIFSIGNALED(c.status)
                ? "the worker was killed by " + signal_description(WTERMSIG(c.status))
                : "the worker exited with code " + std::to_string(WEXITSTATUS(c.status));
      if (!c.err.empty()) why += "; stderr: " + c.err.substr(0, 500);
    }
    throw PluginError("plugin '" + file.name + "' (" + file.path + ") does not load: " + why,
                      reason.empty() ? why : reason);
  }
  PluginInfo info;
  info.file = file;
  try {
    info.manifest = PluginManifest::parse(loaded->manifest);
  } catch (const Error& e) {
    throw PluginError("plugin '" + file.name + "' (" + file.path + ") has a bad " + e.what(),
                      std::string("bad ") + e.what());
  }
  if (info.manifest.name != file.name) {
    throw Error("plugin file '" + file.path + "' names itself '" + info.manifest.name +
                "'; rename the file to gpusweep_" + info.manifest.name + ".so");
  }
  info.runtime = loaded->runtime;
  info.runtime_info = RuntimeInfo::from_json(info.runtime);
  info.abi = loaded->abi.value_or("");
  info.hash = hash_file(file.path);
  // A selected workload is part of what runs: a changed module is a changed
  // plugin for resume's check.
  if (!selection.empty()) info.hash = hash_text(info.hash + " " + info.manifest.raw.dump());
  return info;
}

namespace {

// value names a file (before an optional ":factory" suffix, read as
// gpusweep/module_spec.hpp says), made absolute: from the sweep file's folder
// when the sweep came from a file, else (a command's --set) from the current
// folder.
std::string absolute_from(const std::string& value, const std::string& sweep_file) {
  const ModuleSpec parts = split_module_spec(value);
  const std::string& file = parts.file;
  const std::string rest = parts.factory.empty() ? "" : ":" + parts.factory;
  std::error_code ec;
  if (file.empty() || fs::path(file).is_absolute()) return value;
  const fs::path folder = !sweep_file.empty() && fs::is_regular_file(sweep_file, ec)
                              ? fs::path(sweep_file).parent_path()
                              : fs::path();
  return fs::absolute(folder / file).lexically_normal().string() + rest;
}

}  // namespace

PluginInfo Registry::describe_sweep(SweepSpec& spec) const {
  PluginInfo info = describe(spec.workload);
  Json selection = Json::object();
  for (const auto& p : info.manifest.params) {
    auto it = spec.base.find(p.name);
    if (p.path && it != spec.base.end() && it->is_string() && !it->get<std::string>().empty()) {
      *it = absolute_from(it->get<std::string>(), spec.source);
    } else if (p.path && p.selects && it == spec.base.end() && p.default_value.is_string() &&
               !p.default_value.get<std::string>().empty()) {
      // A selecting path left out is its default, taken from the sweep's folder.
      spec.base[p.name] = absolute_from(p.default_value.get<std::string>(), spec.source);
      it = spec.base.find(p.name);
    }
    if (!p.selects) continue;
    if (spec.grid.contains(p.name)) {
      throw UsageError(spec.source + ": grid." + p.name + ": '" + p.name +
                       "' selects which workload runs, so it cannot vary within one sweep; "
                       "set it in base and write one sweep per " +
                       p.name);
    }
    const bool required = names_selected_file(p);
    if (required && (it == spec.base.end() || !it->is_string() || it->get<std::string>().empty())) {
      throw UsageError(spec.source + ": base." + p.name + " is required by workload '" +
                       spec.workload + "' (" + p.description + "); for example \"base\": {\"" +
                       p.name + "\": \"train_step.py\"}");
    }
    selection[p.name] = it != spec.base.end() ? *it : p.default_value;
  }
  // A workload that selects may take settings of the selected one's own,
  // named as its flags ("--optim"): the selected manifest declares them from
  // the values the sweep gives (the first, for a grid axis).
  if (!selection.empty()) {
    for (const auto& [key, value] : spec.base.items()) {
      if (key.rfind("--", 0) == 0) selection[key] = value;
    }
    for (const auto& [key, values] : spec.grid.items()) {
      if (key.rfind("--", 0) == 0 && values.is_array() && !values.empty()) {
        selection[key] = values.front();
      }
    }
  }
  if (selection.empty()) return info;
  try {
    return describe(spec.workload, selection);
  } catch (const PluginError& e) {
    // The selected workload's own problem (a module that does not import,
    // a bad MANIFEST, a flag map naming no setting), told against the
    // sweep's key: the one the reason starts with, else the selected file's.
    const std::string reason = e.reason();
    for (const auto& [key, value] : selection.items()) {
      if (reason.rfind(key + ": ", 0) == 0) throw UsageError(spec.source + ": base." + reason);
    }
    std::string key = selection.begin().key();
    for (const auto& p : info.manifest.params) {
      if (names_selected_file(p)) key = p.name;
    }
    throw UsageError(spec.source + ": base." + key + ": " + reason);
  }
}

std::string Registry::file_for(const std::string& arg) const {
  std::error_code ec;
  if (fs::exists(arg, ec) || arg.find('/') != std::string::npos ||
      (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".so") == 0)) {
    return arg;
  }
  if (auto f = find(arg)) return f->path;
  describe(arg);  // throws the unknown-workload error with its did-you-mean
  return arg;
}

}  // namespace gpusweep::host
