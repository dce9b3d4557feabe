// Terminal output: aligned tables and human units (ms, GiB, k/s).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpusweep::host {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  // Columns whose cells are numbers are right-aligned.
  void right_align(size_t column) { right_.resize(headers_.size()), right_[column] = true; }
  void add_row(std::vector<std::string> cells);
  std::string render() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

// Display width of UTF-8 text (code points; good enough for tables).
size_t display_width(std::string_view s);

// Colour only on a terminal (and not with NO_COLOR set or TERM=dumb).
bool use_colour();
// Wraps text in an ANSI colour ("32" green, "31" red, "33" yellow) when use_colour().
std::string colour(const std::string& text, const char* code);

std::string human_bytes(double bytes);                               // "1.50 GiB"
std::string human_seconds(double seconds);                           // "1.23 ms", "4.5 s", "2:03"
std::string human_count(double value);                               // "12.3k", "1.20M"
std::string human_rate(double per_second, const std::string& unit);  // "12.3k updates/s"
std::string fixed(double value, int decimals);
std::string clock_time(double seconds);  // "1:02:03" or "2:03"
std::string utc_now();                   // "2026-11-25T15:02:03.123Z"
// "a, b or c" for messages.
std::string name_list(const std::vector<std::string>& names);
// True when s is one or more decimal digits and nothing else.
bool all_digits(const std::string& s);
std::string truncate(const std::string& s, size_t width);
// Word-wraps text to lines of at most width columns (joined with '\n'; a
// Table renders such a cell on several lines).
std::string wrap(const std::string& text, size_t width);

}  // namespace gpusweep::host
