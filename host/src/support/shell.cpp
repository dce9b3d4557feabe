// Shell quoting; see shell.hpp.
#include "support/shell.hpp"

#include <cctype>

namespace gpusweep::host {

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_word(const std::string& word) {
  if (word.empty()) return "''";
  for (char ch : word) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) == 0 && std::string("-_./:=@+,%").find(ch) == std::string::npos) {
      return shell_quote(word);
    }
  }
  return word;
}

}  // namespace gpusweep::host
