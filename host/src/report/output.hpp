// Listing output in the formats every listing command offers: an aligned
// table for people, CSV and JSON for programs, Markdown for reports. Records
// keep raw values (JSON); the table and Markdown show them humanised.
#pragma once

#include "support/format.hpp"

#include <nlohmann/json.hpp>

#include <functional>
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

// Renders records (JSON objects) in the chosen format.
std::string render(const std::vector<nlohmann::json>& records, const std::vector<Column>& columns,
                   OutputFormat format);

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& s);

}  // namespace gpusweep::host
