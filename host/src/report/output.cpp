// Listing output formats; see output.hpp.
#include "report/output.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "support/error.hpp"

namespace gpusweep::host {

OutputFormat parse_output_format(const std::string& text) {
  if (text == "table") return OutputFormat::table;
  if (text == "csv") return OutputFormat::csv;
  if (text == "json") return OutputFormat::json;
  if (text == "md") return OutputFormat::md;
  throw UsageError("--format " + text + ": use table, csv, json or md");
}

const char* output_format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::csv:
      return "csv";
    case OutputFormat::json:
      return "json";
    case OutputFormat::md:
      return "md";
    default:
      return "table";
  }
}

std::string interval_text(double low, double high) {
  if (std::isnan(low)) return "-";
  return "[" + fixed(low, 3) + ", " + fixed(high, 3) + "]";
}

Column interval_column(const std::string& low, const std::string& high) {
  return {low, "95% CI", true, [low, high](const nlohmann::json& r) {
            return r[low].is_null() ? std::string("-")
                                    : interval_text(r[low].get<double>(), r[high].get<double>());
          }};
}

Column ratio_column(const std::string& key, const std::string& header, const std::string& if_null) {
  return {key, header, true, [key, if_null](const nlohmann::json& r) {
            return r[key].is_null() ? if_null : fixed(r[key].get<double>(), 3) + "x";
          }};
}

Column verdict_column(const std::string& key, OutputFormat format, const std::string& good,
                      const std::string& bad) {
  return {key, key, false, [key, format, good, bad](const nlohmann::json& r) {
            const std::string v = r[key].get<std::string>();
            if (format != OutputFormat::table) return v;
            if (v == good) return colour(v, "32");
            if (v == bad) return colour(v, "31");
            return v;
          }};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

RecordWriter::RecordWriter(std::vector<std::string> keys, bool csv, std::ostream& out)
    : keys_(std::move(keys)), csv_(csv), out_(out), lead_(keys_.size()) {
  for (size_t col = 0; col < keys_.size(); ++col) {
    if (col > 0) lead_[col] = csv_ ? "," : ", ";
    if (!csv_) lead_[col] += nlohmann::json(keys_[col]).dump() + ": ";
  }
  if (csv_) {
    for (size_t i = 0; i < keys_.size(); ++i) out_ << (i ? "," : "") << csv_field(keys_[i]);
    out_ << "\n";
  }
}

std::string RecordWriter::cells(const std::vector<nlohmann::json>& cells) const {
  std::string text;
  for (size_t col = 0; col < cells.size(); ++col) text += lead_[col] + cell(cells[col]);
  return text;
}

void RecordWriter::append_number(std::string& text, size_t col, double v) const {
  text += lead_[col];
  if (!std::isfinite(v)) {
    if (!csv_) text += "null";
    return;
  }
  char digits[32];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  text.append(digits, end);
}

void RecordWriter::emit(const std::string& text) {
  if (!csv_) out_ << (count_ == 0 ? "[\n  {" : ",\n  {");
  out_ << text << (csv_ ? "\n" : "}");
  ++count_;
}

int64_t RecordWriter::finish() {
  if (!csv_) out_ << (count_ == 0 ? "[]\n" : "\n]\n");
  out_.flush();
  return count_;
}

std::string RecordWriter::cell(const nlohmann::json& v) const {
  if (v.is_null()) return csv_ ? "" : "null";
  if (v.is_string()) return csv_ ? csv_field(v.get<std::string>()) : v.dump();
  return csv_ ? csv_field(v.dump()) : v.dump();  // an array's commas quoted in CSV
}

namespace {

std::string raw(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string shown(const Column& c, const nlohmann::json& record) {
  if (c.show) return c.show(record);
  const auto it = record.find(c.key);
  if (it == record.end() || it->is_null()) return "-";
  if (it->is_number_float()) return human_count(it->get<double>());
  return raw(*it);
}

}  // namespace

namespace {

// A listing built a chunk of records at a time: the header first, rows as
// they come, the ending on finish.
class Renderer {
 public:
  Renderer(const std::vector<Column>& columns, OutputFormat format)
      : columns_(columns), format_(format) {
    if (format == OutputFormat::csv || format == OutputFormat::json) {
      std::vector<std::string> keys;
      for (const auto& c : columns) keys.push_back(c.key);
      records_.emplace(std::move(keys), format == OutputFormat::csv, text_);
    } else if (format == OutputFormat::table) {
      std::vector<std::string> headers;
      for (const auto& c : columns) headers.push_back(c.header);
      table_.emplace(headers);
      for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].right) table_->right_align(i);
      }
    } else {
      out_ += "|";
      for (const auto& c : columns) out_ += " " + c.header + " |";
      out_ += "\n|";
      for (const auto& c : columns) out_ += c.right ? " ---: |" : " --- |";
      out_ += "\n";
    }
  }

  void add(const std::vector<nlohmann::json>& records) {
    for (const auto& r : records) {
      switch (format_) {
        case OutputFormat::json:
        case OutputFormat::csv: {
          std::vector<nlohmann::json> cells;
          cells.reserve(columns_.size());
          for (const auto& c : columns_) {
            const auto it = r.find(c.key);
            cells.push_back(it == r.end() ? nlohmann::json() : *it);
          }
          records_->emit(records_->cells(cells));
          break;
        }
        case OutputFormat::md:
          out_ += "|";
          for (const auto& c : columns_) {
            std::string cell = shown(c, r);
            for (auto& ch : cell) {
              if (ch == '|' || ch == '\n') ch = ' ';
            }
            out_ += " " + cell + " |";
          }
          out_ += "\n";
          break;
        case OutputFormat::table: {
          std::vector<std::string> row;
          row.reserve(columns_.size());
          for (const auto& c : columns_) row.push_back(shown(c, r));
          table_->add_row(std::move(row));
          break;
        }
      }
    }
  }

  std::string finish() {
    if (format_ == OutputFormat::table) return table_->render();
    if (records_) {
      records_->finish();
      return text_.str();
    }
    return std::move(out_);
  }

 private:
  const std::vector<Column>& columns_;
  OutputFormat format_;
  std::optional<Table> table_;
  std::ostringstream text_;              // csv and json, through records_
  std::optional<RecordWriter> records_;  // csv and json
  std::string out_;                      // md
};

}  // namespace

TextTable table_cells(const std::vector<nlohmann::json>& records,
                      const std::vector<Column>& columns) {
  TextTable t;
  for (const auto& c : columns) {
    t.headers.push_back(c.header);
    t.numeric.push_back(c.right);
  }
  for (const auto& r : records) {
    std::vector<std::string> row;
    row.reserve(columns.size());
    for (const auto& c : columns) row.push_back(shown(c, r));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string render(const std::vector<nlohmann::json>& records, const std::vector<Column>& columns,
                   OutputFormat format) {
  Renderer r(columns, format);
  r.add(records);
  return r.finish();
}

std::string render_chunks(size_t rows,
                          const std::function<std::vector<nlohmann::json>(size_t, size_t)>& make,
                          const std::vector<Column>& columns, OutputFormat format) {
  constexpr size_t kChunk = 1024;
  Renderer r(columns, format);
  for (size_t begin = 0; begin < rows; begin += kChunk) {
    r.add(make(begin, std::min(rows, begin + kChunk)));
  }
  return r.finish();
}

}  // namespace gpusweep::host
