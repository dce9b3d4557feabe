// Tables and human units; see format.hpp.
#include "support/format.hpp"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace gpusweep::host {

size_t display_width(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B) {  // an ANSI colour sequence takes no room
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    n += (c & 0xC0) != 0x80 ? 1 : 0;
  }
  return n;
}

bool use_colour() {
  static const bool on = ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr &&
                         std::getenv("TERM") != nullptr &&
                         std::string(std::getenv("TERM")) != "dumb";
  return on;
}

std::string colour(const std::string& text, const char* code) {
  return use_colour() ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

namespace {
// The i-th line of a cell ("" past its last).
std::string_view line_of(const std::string& s, size_t i) {
  size_t start = 0;
  for (; i > 0; --i) {
    const size_t nl = s.find('\n', start);
    if (nl == std::string::npos) return {};
    start = nl + 1;
  }
  const size_t end = s.find('\n', start);
  return std::string_view(s).substr(start, end == std::string::npos ? end : end - start);
}

size_t line_count(const std::string& s) {
  return 1 + static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}
}  // namespace

std::string wrap(const std::string& text, size_t width) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      out += (out.empty() ? "" : "\n") + line;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += (out.empty() ? "" : "\n") + line;
  return out;
}

// Without a string per cell: 100,000 rows of 12 cells rendered through
// vectors of copied lines took a third of a second.
std::string Table::render() const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = display_width(headers_[c]);
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size(); ++c) {
      for (size_t i = 0, n = line_count(r[c]); i < n; ++i) {
        width[c] = std::max(width[c], display_width(line_of(r[c], i)));
      }
    }
  }
  std::string out;
  // One physical line of a row: each cell's i-th line, padded.
  const auto line = [&](const std::vector<std::string>& cells, size_t i) {
    const size_t begin = out.size();
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string_view cell = line_of(cells[c], i);
      const size_t pad = width[c] - display_width(cell);
      const bool right = c < right_.size() && right_[c];
      if (c > 0) out += "  ";
      if (right) out.append(pad, ' ');
      out += cell;
      if (!right && c + 1 < cells.size()) out.append(pad, ' ');
    }
    while (out.size() > begin && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(headers_, 0);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule, 0);
  for (const auto& r : rows_) {
    size_t height = 1;
    for (const auto& c : r) height = std::max(height, line_count(c));
    for (size_t i = 0; i < height; ++i) line(r, i);
  }
  return out;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

namespace {
// Three significant digits: 1.23, 12.3, 123.
std::string sig3(double v) {
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : 2);
}
}  // namespace

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return (u == 0 ? fixed(bytes, 0) : sig3(bytes)) + " " + units[u];
}

std::string human_seconds(double s) {
  if (s < 1e-6) return sig3(s * 1e9) + " ns";
  if (s < 1e-3) return sig3(s * 1e6) + " us";
  if (s < 1) return sig3(s * 1e3) + " ms";
  if (s < 60) return sig3(s) + " s";
  return clock_time(s);
}

std::string human_count(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return sig3(v / 1e9) + "G";
  if (a >= 1e6) return sig3(v / 1e6) + "M";
  if (a >= 1e4) return sig3(v / 1e3) + "k";
  if (a >= 100) return fixed(v, 0);
  return sig3(v);
}

std::string human_rate(double per_second, const std::string& unit) {
  return human_count(per_second) + " " + unit + "/s";
}

std::string clock_time(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60,
                  total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", total / 60, total % 60);
  }
  return buf;
}

std::string truncate(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (n + 1 >= width) break;
      ++n;
    }
    out += s[i];
  }
  return out + "…";
}

std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

std::string utc_now() {
  char buf[32];
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[40];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
}

}  // namespace gpusweep::host
