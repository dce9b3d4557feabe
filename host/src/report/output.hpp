// Listing output in the formats every listing command offers: an aligned
// table for people, CSV and JSON for programs, Markdown for reports. Records
// keep raw values (JSON); the table and Markdown show them humanised.
#pragma once

#include "support/format.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gpusweep::host {

enum class OutputFormat { table, csv, json, md };

// Parses "table" | "csv" | "json" | "md"; throws UsageError otherwise.
OutputFormat parse_output_format(const std::string& text);
const char* output_format_name(OutputFormat f);

struct Column {
  std::string key;     // record key
  std::string header;  // shown in table and Markdown
  bool right = false;  // right-align (numbers)
  // How a value shows in table/Markdown; default: strings as-is, numbers via human_count.
  std::function<std::string(const nlohmann::json& record)> show;
};

// A table as text cells, unpadded: for views that lay cells out themselves
// (the HTML report, serve's page).
struct TextTable {
  std::vector<std::string> headers;
  std::vector<bool> numeric;  // right-aligned
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> footer;  // lines under it (notes every row shares)
};

// The records as the table format shows each cell (Column::show, else the
// default), with the columns' headers and alignment; no footer.
TextTable table_cells(const std::vector<nlohmann::json>& records,
                      const std::vector<Column>& columns);

// Renders records (JSON objects) in the chosen format.
std::string render(const std::vector<nlohmann::json>& records, const std::vector<Column>& columns,
                   OutputFormat format);

// The same listing of `rows` records made a chunk at a time by
// make(begin, end): a listing of 100,000 rows never holds every record (half
// its time went to allocating and freeing them all at once).
std::string render_chunks(size_t rows,
                          const std::function<std::vector<nlohmann::json>(size_t, size_t)>& make,
                          const std::vector<Column>& columns, OutputFormat format);

// The value, or null: for records with optional fields.
template <typename T>
nlohmann::json json_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// "[0.912, 1.034]": an interval as the tables show it ("-" when low is NaN).
std::string interval_text(double low, double high);

// Shows record keys low and high as one "95% CI" cell ("-" when null).
Column interval_column(const std::string& low, const std::string& high);

// Shows key as a ratio "1.234x" ("-", or `if_null`, when null).
Column ratio_column(const std::string& key, const std::string& header,
                    const std::string& if_null = "-");

// Shows key coloured when it is one of the good (green) or bad (red) words,
// in the table format only.
Column verdict_column(const std::string& key, OutputFormat format, const std::string& good,
                      const std::string& bad);

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& s);

// The CSV and JSON text of every listing, written as its records come: the
// header (CSV) or "[", each record's cells in the keys' order (JSON: an
// object a line), and the end. A record's cells are text once made: export
// renders a trial's cells once and appends each of its blocks' numbers with
// to_chars (a Json per cell of a million blocks would cost seconds).
class RecordWriter {
 public:
  RecordWriter(std::vector<std::string> keys, bool csv, std::ostream& out);

  // The text of cells 0..cells.size()-1 (null: empty in CSV).
  std::string cells(const std::vector<nlohmann::json>& cells) const;
  // Appends cell `col`, a number (not finite: null).
  void append_number(std::string& text, size_t col, double v) const;
  // Writes one record's text, all its cells made.
  void emit(const std::string& text);
  // Ends the listing; the records written.
  int64_t finish();

 private:
  std::string cell(const nlohmann::json& v) const;

  std::vector<std::string> keys_;
  bool csv_;
  std::ostream& out_;
  std::vector<std::string> lead_;  // what comes before each cell
  int64_t count_ = 0;
};

}  // namespace gpusweep::host
