// Protocol events; see events.hpp.
#include "protocol/events.hpp"

#include <sstream>

namespace gpusweep::host::event {

namespace {

// The payload whose name the object carries, from the variant's own list.
template <size_t I = 0>
Event decode_as(const std::string& name, const nlohmann::json& e) {
  if constexpr (I + 1 == std::variant_size_v<Event>) {
    return Other{name, e};
  } else {
    using T = std::variant_alternative_t<I, Event>;
    if (name == T::name) return T::from_json(e);
    return decode_as<I + 1>(name, e);
  }
}

}  // namespace

std::string kind(const nlohmann::json& e) {
  if (!e.is_object()) return "";
  const auto it = e.find("event");
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

const char* kind(const Event& e) {
  return std::visit(
      [](const auto& v) -> const char* {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Other>) {
          return v.name.c_str();
        } else {
          return v.name;
        }
      },
      e);
}

Event decode(const nlohmann::json& e) { return decode_as(kind(e), e); }

nlohmann::json encode(const Event& e) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Other>) {
          return v.json;
        } else {
          return v.to_json();
        }
      },
      e);
}

std::vector<Event> parse(const std::string& text) {
  std::vector<Event> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    try {
      const auto e = nlohmann::json::parse(line);
      if (e.is_object()) out.push_back(decode(e));
    } catch (const nlohmann::json::parse_error&) {
      // Only the worker writes here: a torn last line.
    }
  }
  return out;
}

}  // namespace gpusweep::host::event
