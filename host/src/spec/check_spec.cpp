// A check's stored record; see check_spec.hpp.
#include "spec/check_spec.hpp"

#include "spec/sweep_internal.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <vector>

namespace gpusweep::host {

namespace {

const std::vector<std::string> kBuildKeys = {"label", "path", "hash", "version", "abi", "plugin"};
const std::vector<std::string> kCheckKeys = {
    "tolerance",     kBaseBuild, kHeadBuild, "memory_tolerance", "max_quality_loss",
    "quality_guard", "confirm",  "budget_s", "judged_rounds"};

void known_keys(const std::string& source, const std::string& where, const Json& j,
                const std::vector<std::string>& known) {
  if (!j.is_object()) detail::usage(source, where, "expected an object, got " + j.dump());
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      detail::usage(source, where + "." + key,
                    "unknown key (a check's record is written by gpusweep check)" +
                        detail::suggestion(key, known));
    }
  }
}

template <typename T>
void read(const std::string& source, const std::string& where, const Json& j, const char* key,
          T& into) {
  const auto it = j.find(key);
  if (it == j.end()) return;
  try {
    into = it->get<T>();
  } catch (const Json::exception&) {
    detail::usage(source, where + "." + key, "unexpected value " + it->dump());
  }
}

CheckBuild parse_build(const std::string& source, const std::string& where, const Json& j) {
  known_keys(source, where, j, kBuildKeys);
  CheckBuild b;
  read(source, where, j, "label", b.label);
  read(source, where, j, "path", b.path);
  read(source, where, j, "hash", b.hash);
  read(source, where, j, "version", b.version);
  read(source, where, j, "abi", b.abi);
  read(source, where, j, "plugin", b.plugin);
  return b;
}

template <typename T>
void write(Json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

}  // namespace

Json CheckBuild::to_json() const {
  Json j{{"label", label}, {"path", path}, {"hash", hash}, {"version", version}, {"abi", abi}};
  if (!plugin.empty()) j["plugin"] = plugin;
  return j;
}

const CheckBuild& CheckSpec::build(const std::string& role) const {
  if (role == kBaseBuild) return base;
  if (role == kHeadBuild) return head;
  throw UsageError("a check's builds are base and head, not '" + role + "'");
}

CheckBuild& CheckSpec::build(const std::string& role) {
  return const_cast<CheckBuild&>(static_cast<const CheckSpec&>(*this).build(role));
}

Json CheckSpec::to_json() const {
  Json j{{kBaseBuild, base.to_json()}, {kHeadBuild, head.to_json()}};
  write(j, "tolerance", tolerance);
  write(j, "memory_tolerance", memory_tolerance);
  write(j, "max_quality_loss", max_quality_loss);
  write(j, "quality_guard", quality_guard);
  if (confirm) j["confirm"] = true;
  write(j, "budget_s", budget_s);
  write(j, "judged_rounds", judged_rounds);
  return j;
}

Json CheckSpec::identity() const {
  CheckSpec same = *this;
  same.budget_s.reset();
  same.judged_rounds.reset();
  Json j = same.to_json();
  j[kBaseBuild] = Json{{"hash", base.hash}};
  j[kHeadBuild] = Json{{"hash", head.hash}};
  return j;
}

CheckSpec parse_check(const std::string& source, const Json& check) {
  known_keys(source, "check", check, kCheckKeys);
  CheckSpec c;
  for (const char* role : {kBaseBuild, kHeadBuild}) {
    if (auto it = check.find(role); it != check.end()) {
      c.build(role) = parse_build(source, std::string("check.") + role, *it);
    }
  }
  const auto optional = [&](const char* key, auto& into) {
    if (!check.contains(key)) return;
    typename std::decay_t<decltype(into)>::value_type v{};
    read(source, "check", check, key, v);
    into = v;
  };
  optional("tolerance", c.tolerance);
  optional("memory_tolerance", c.memory_tolerance);
  optional("max_quality_loss", c.max_quality_loss);
  optional("quality_guard", c.quality_guard);
  optional("budget_s", c.budget_s);
  optional("judged_rounds", c.judged_rounds);
  read(source, "check", check, "confirm", c.confirm);
  return c;
}

}  // namespace gpusweep::host
