// Protocol events; see events.hpp.
#include "protocol/events.hpp"

#include <sstream>

namespace gpusweep::host::event {

std::string kind(const nlohmann::json& e) {
  if (!e.is_object()) return "";
  const auto it = e.find("event");
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<nlohmann::json> parse(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::parse_error&) {
      // Only the worker writes here: a torn last line.
    }
  }
  return out;
}

}  // namespace gpusweep::host::event
