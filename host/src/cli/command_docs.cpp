// A command's help and docs/commands.md, written from its table; see
// options.hpp.
#include "cli/options.hpp"

#include <algorithm>
#include <sstream>

namespace gpusweep::host {

namespace {

bool is_positional(const CommandDef& c, const std::string& name) {
  return std::find(c.positional.begin(), c.positional.end(), name) != c.positional.end();
}

// The docs page with the rest, from the docs folder.
std::string more_link(const CommandDef& c) {
  return c.page.empty() ? "commands.md#gpusweep-" + c.name : c.page;
}

// A markdown table cell: its text with the pipes escaped, and in prose the
// angle brackets too (gpusweep_<name>.so is no HTML tag).
std::string cell(const std::string& text, bool prose = false) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += '\\';
    if (prose && ch == '<') {
      out += "&lt;";
    } else {
      out += ch == '\n' ? ' ' : ch;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> usage_lines(const CommandDef& c) {
  if (!c.forms.empty()) return c.forms;
  std::string line;
  for (const auto& name : c.positional) {
    const Option* o = c.option(name);
    std::string arg = o->value + (o->kind == OptionKind::texts ? " ..." : "");
    line += (line.empty() ? "" : " ") + (o->is_required ? arg : "[" + arg + "]");
  }
  for (const auto& o : c.options) {
    if (o.is_required && !is_positional(c, o.name)) {
      line += (line.empty() ? "--" : " --") + o.name + " " + o.value;
    }
  }
  return {line + (line.empty() ? "[options]" : " [options]")};
}

std::string help_text(const CommandDef& c) {
  std::ostringstream out;
  const auto lines = usage_lines(c);
  for (size_t i = 0; i < lines.size(); ++i) {
    out << (i == 0 ? "usage: " : "       ") << "gpusweep " << c.name << " " << lines[i] << "\n";
  }
  out << "\n" << c.about << "\n\n" << option_descriptions(c) << "\n";
  if (c.more_help != nullptr) out << c.more_help() << "\n";
  out << "More: docs/" << more_link(c) << "\n";
  return out.str();
}

std::string commands_markdown() {
  std::ostringstream out;
  out << "| command | what it does |\n|---|---|\n";
  for (const auto& c : command_table()) {
    out << "| [`" << c.name << "`](#gpusweep-" << c.name << ") | " << cell(c.summary, true)
        << " |\n";
  }
  for (const auto& c : command_table()) {
    out << "\n### gpusweep " << c.name << "\n\n";
    for (const auto& line : usage_lines(c)) out << "    gpusweep " << c.name << " " << line << "\n";
    out << "\n" << c.about << "\n";
    if (!c.options.empty()) {
      out << "\n| option | default | what it does |\n|---|---|---|\n";
      for (const auto& o : c.options) {
        std::string name = "--" + o.name + (o.value.empty() ? "" : " " + o.value);
        if (o.short_name != 0) name = std::string("-") + o.short_name + ", " + name;
        // An option given by position is shown first as the value it is.
        if (is_positional(c, o.name)) name = o.value + "`, `" + name;
        out << "| `" << cell(name) << "` | "
            << (o.default_text.empty() ? "" : "`" + cell(o.default_text) + "`") << " | "
            << cell(o.described(), true) << " |\n";
      }
    }
    if (!c.page.empty()) out << "\nMore: [" << c.page << "](" << c.page << ").\n";
  }
  return out.str();
}

}  // namespace gpusweep::host
