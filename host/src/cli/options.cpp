// Options as data, and the parser they build; see options.hpp.
#include "cli/options.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <iostream>

namespace gpusweep::host {

namespace {

template <typename T>
po::typed_value<T>* typed(const Option& o) {
  auto* v = po::value<T>()->value_name(o.value);
  if (o.is_required) v->required();
  return v;
}

// The option's value semantic: what program_options parses its text into.
const po::value_semantic* semantic(const Option& o) {
  switch (o.kind) {
    case OptionKind::flag:
      return po::bool_switch();
    case OptionKind::text: {
      auto* v = typed<std::string>(o);
      return o.default_text.empty() ? v : v->default_value(o.default_text);
    }
    case OptionKind::number: {
      auto* v = typed<double>(o);
      return o.default_text.empty() ? v
                                    : v->default_value(std::stod(o.default_text), o.default_text);
    }
    case OptionKind::integer: {
      auto* v = typed<int64_t>(o);
      return o.default_text.empty() ? v
                                    : v->default_value(std::stoll(o.default_text), o.default_text);
    }
    case OptionKind::texts:
      return typed<std::vector<std::string>>(o)->composing();
  }
  return po::bool_switch();
}

}  // namespace

const Option* CommandDef::option(const std::string& option_name) const {
  for (const auto& o : options) {
    if (o.name == option_name) return &o;
  }
  return nullptr;
}

const CommandDef* find_command(const std::string& name) {
  for (const auto& c : command_table()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

po::options_description option_descriptions(const CommandDef& c) {
  po::options_description all("Options");
  all.add_options()("help,h", "show this help");
  for (const auto& o : c.options) {
    const std::string spec = o.short_name != 0 ? o.name + "," + o.short_name : o.name;
    all.add_options()(spec.c_str(), semantic(o), o.described().c_str());
  }
  return all;
}

po::variables_map parse_args(const CommandDef& c, const Args& args, bool* help) {
  const po::options_description all = option_descriptions(c);
  po::positional_options_description positional;
  for (const auto& name : c.positional) {
    const Option* o = c.option(name);
    positional.add(name.c_str(), o != nullptr && o->kind == OptionKind::texts ? -1 : 1);
  }
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    const bool asked = vm.count("help") != 0U;
    if (help != nullptr) *help = asked;
    if (!asked) po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError("gpusweep " + c.name + ": " + e.what() + " (see: gpusweep " + c.name +
                     " --help)");
  }
  return vm;
}

int run_command(const CommandDef& c, const Args& args) {
  bool help = false;
  const po::variables_map vm = parse_args(c, args, &help);
  if (help) {
    std::cout << help_text(c);
    return 0;
  }
  return c.run(vm);
}

}  // namespace gpusweep::host
