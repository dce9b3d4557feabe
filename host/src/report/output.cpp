// Listing output formats; see output.hpp.
#include "report/output.hpp"

#include <cmath>

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

std::string render(const std::vector<nlohmann::json>& records, const std::vector<Column>& columns,
                   OutputFormat format) {
  std::string out;
  switch (format) {
    case OutputFormat::json: {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& r : records) {
        nlohmann::json o = nlohmann::json::object();
        for (const auto& c : columns) o[c.key] = r.contains(c.key) ? r.at(c.key) : nullptr;
        arr.push_back(o);
      }
      return arr.dump(2) + "\n";
    }
    case OutputFormat::csv: {
      for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_field(columns[i].key);
      out += "\n";
      for (const auto& r : records) {
        for (size_t i = 0; i < columns.size(); ++i) {
          out += (i ? "," : "") +
                 csv_field(r.contains(columns[i].key) ? raw(r.at(columns[i].key)) : "");
        }
        out += "\n";
      }
      return out;
    }
    case OutputFormat::md: {
      out += "|";
      for (const auto& c : columns) out += " " + c.header + " |";
      out += "\n|";
      for (const auto& c : columns) out += c.right ? " ---: |" : " --- |";
      out += "\n";
      for (const auto& r : records) {
        out += "|";
        for (const auto& c : columns) {
          std::string cell = shown(c, r);
          for (auto& ch : cell) {
            if (ch == '|' || ch == '\n') ch = ' ';
          }
          out += " " + cell + " |";
        }
        out += "\n";
      }
      return out;
    }
    case OutputFormat::table: {
      std::vector<std::string> headers;
      for (const auto& c : columns) headers.push_back(c.header);
      Table t(headers);
      for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].right) t.right_align(i);
      }
      for (const auto& r : records) {
        std::vector<std::string> row;
        for (const auto& c : columns) row.push_back(shown(c, r));
        t.add_row(row);
      }
      return t.render();
    }
  }
  return out;
}

}  // namespace gpusweep::host
