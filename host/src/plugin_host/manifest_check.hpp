// Checking a plugin manifest's JSON for every problem at once, each with its
// fix (for `gpusweep plugins --check`), and the smoke run's smallest config.
#pragma once

#include <gpusweep/manifest.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct CheckItem {
  enum class Level { ok, note, problem };
  Level level = Level::ok;
  std::string what;  // one sentence: what was checked, or what is wrong
  std::string fix;   // how to fix it (notes and problems)
};

// Collects check items in the order they are found.
class CheckItems {
 public:
  void ok(std::string what) { items_.push_back({CheckItem::Level::ok, std::move(what), {}}); }
  void note(std::string what, std::string fix) {
    items_.push_back({CheckItem::Level::note, std::move(what), std::move(fix)});
  }
  void problem(std::string what, std::string fix) {
    items_.push_back({CheckItem::Level::problem, std::move(what), std::move(fix)});
  }
  std::vector<CheckItem>& all() { return items_; }

 private:
  std::vector<CheckItem> items_;
};

// j[key] when it is a string.
std::optional<std::string> json_string(const nlohmann::json& j, const char* key);

// 3 -> "3", 0.5 -> "0.5": a number as a person writes it (the SDK's, which
// the manifest's own messages use).
using gpusweep::number_text;

// Every problem (and note) in a manifest's JSON, not only the first.
// expected_name: the workload name the file name implies ("" to skip).
std::vector<CheckItem> check_manifest(const nlohmann::json& manifest,
                                      const std::string& expected_name);

// The smallest config the manifest allows: every parameter at its default,
// batch_size at its minimum (at least 1).
nlohmann::json smallest_config(const nlohmann::json& manifest);

}  // namespace gpusweep::host
