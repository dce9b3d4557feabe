// Plugin loading; see loader.hpp.
#include "worker/loader.hpp"

#include "support/error.hpp"

#include <boost/dll/shared_library.hpp>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace gpusweep::host {

namespace {
// Size of the v1.0 table: every member up to and including destroy.
constexpr size_t kMinTableSize = offsetof(gpusweep_plugin, destroy) + sizeof(void*);

std::string version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}
}  // namespace

std::string abi_problem(const gpusweep_plugin* t) {
  const std::string host = version(GPUSWEEP_ABI_MAJOR, GPUSWEEP_ABI_MINOR);
  if (t->struct_size < 3 * sizeof(uint32_t)) {
    return "its function table is malformed (struct_size " + std::to_string(t->struct_size) + ")";
  }
  const std::string plugin = version(t->abi_major, t->abi_minor);
  if (t->abi_major != GPUSWEEP_ABI_MAJOR) {
    return "it was built for plugin ABI " + plugin + " but this gpusweep speaks ABI " + host +
           " (the major versions must match); rebuild the plugin against this gpusweep's SDK";
  }
  if (t->abi_minor > GPUSWEEP_ABI_MINOR) {
    return "it was built for plugin ABI " + plugin + ", newer than this gpusweep's ABI " + host +
           "; upgrade gpusweep or rebuild the plugin against this SDK";
  }
  if (t->struct_size < kMinTableSize) {
    return "its function table is too small for ABI " + plugin + " (struct_size " +
           std::to_string(t->struct_size) + ", expected at least " + std::to_string(kMinTableSize) +
           ")";
  }
  const void* required[] = {reinterpret_cast<const void*>(t->manifest),
                            reinterpret_cast<const void*>(t->runtime),
                            reinterpret_cast<const void*>(t->create),
                            reinterpret_cast<const void*>(t->step),
                            reinterpret_cast<const void*>(t->synchronize),
                            reinterpret_cast<const void*>(t->evaluate),
                            reinterpret_cast<const void*>(t->stats),
                            reinterpret_cast<const void*>(t->error_message),
                            reinterpret_cast<const void*>(t->destroy)};
  for (const void* fn : required) {
    if (fn == nullptr) return "its function table has a NULL entry";
  }
  return {};
}

LoadedPlugin load_plugin(const std::string& path) {
  // Plugins are never unloaded (see the header): every library loaded joins
  // this list, which lives to the end of the process (refused ones too: a
  // LibTorch plugin of another ABI must not be unloaded either).
  static auto* const loaded = new std::vector<std::unique_ptr<boost::dll::shared_library>>();
  static std::mutex loaded_mutex;
  auto lib = std::make_unique<boost::dll::shared_library>();
  boost::dll::fs::error_code ec;
  lib->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    // Boost.DLL clears dlerror(); a second dlopen fails the same way and
    // tells why (missing file, missing dependency, undefined symbol).
    std::string detail = ec.message();
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      if (const char* why = dlerror()) detail = why;
    }
    throw PluginLoadError(path, "cannot load it: " + detail);
  }
  const boost::dll::shared_library& library = [&]() -> const boost::dll::shared_library& {
    const std::lock_guard<std::mutex> hold(loaded_mutex);
    return *loaded->emplace_back(std::move(lib));
  }();
  if (!library.has(GPUSWEEP_ENTRY_SYMBOL)) {
    throw PluginLoadError(path, std::string("it is not a gpusweep plugin: it does not export ") +
                                    GPUSWEEP_ENTRY_SYMBOL +
                                    " (define it with GPUSWEEP_EXPORT_WORKLOAD)");
  }
  auto entry = library.get<const gpusweep_plugin*()>(GPUSWEEP_ENTRY_SYMBOL);
  const gpusweep_plugin* table = entry();
  if (table == nullptr) {
    throw PluginLoadError(path, std::string(GPUSWEEP_ENTRY_SYMBOL) + " returned NULL");
  }
  if (auto problem = abi_problem(table); !problem.empty()) throw PluginLoadError(path, problem);
  return LoadedPlugin{table, path, version(table->abi_major, table->abi_minor), {}};
}

std::string workload_manifest(const LoadedPlugin& plugin, const std::string& config_json) {
  const char* own = plugin.table->manifest();
  const auto* ext =
      find_extension<gpusweep_ext_selected_manifest>(plugin.table, GPUSWEEP_EXT_SELECTED_MANIFEST);
  if (ext == nullptr) return own;
  const nlohmann::json manifest = nlohmann::json::parse(own, nullptr, false);
  const nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (!manifest.is_object() || !config.is_object()) return own;
  bool selected = false;
  for (const auto& p : manifest.value("params", nlohmann::json::array())) {
    if (p.is_object() && p.value("selects", false) && config.contains(p.value("name", ""))) {
      selected = true;
    }
  }
  if (!selected) return own;
  const char* text = nullptr;
  if (ext->manifest(config_json.c_str(), &text) != GPUSWEEP_STATUS_OK) {
    const std::string why = text != nullptr ? text : "it selected no workload";
    throw PluginError(why, why);
  }
  return text != nullptr ? text : own;
}

}  // namespace gpusweep::host
