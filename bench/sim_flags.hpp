// The command line of bench/'s simulators, declared once a program: each
// option names the variable it sets, whose starting value is its default,
// so `--help` and the parser cannot disagree. Bad input prints the usage to
// stderr and exits 2.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gpusweep::bench {

class SimFlags {
 public:
  SimFlags(std::string program, std::string about)
      : program_(std::move(program)), about_(std::move(about)) {}

  SimFlags& option(std::string name, int* target, std::string help) {
    return add(std::move(name), target, std::move(help));
  }
  SimFlags& option(std::string name, std::uint64_t* target, std::string help) {
    return add(std::move(name), target, std::move(help));
  }
  SimFlags& option(std::string name, double* target, std::string help) {
    return add(std::move(name), target, std::move(help));
  }
  // A string option; a non-empty `choices` is the list of values it takes.
  SimFlags& option(std::string name, std::string* target, std::string help,
                   std::vector<std::string> choices = {}) {
    add(std::move(name), target, std::move(help));
    options_.back().choices = std::move(choices);
    return *this;
  }
  // The last option declared (an integer) takes no value below `least`.
  SimFlags& at_least(long least) {
    options_.back().least = least;
    return *this;
  }
  // An option without a value: present sets it true.
  SimFlags& flag(std::string name, bool* target, std::string help) {
    return add(std::move(name), target, std::move(help));
  }

  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::cout << usage();
        std::exit(0);
      }
      const Option* o = find(arg);
      if (o == nullptr) fail("unknown option " + arg);
      if (auto* b = std::get_if<bool*>(&o->target)) {
        **b = true;
        continue;
      }
      if (i + 1 >= argc) fail(arg + " needs a value");
      set(*o, argv[++i]);
    }
  }

  std::string usage() const {
    std::ostringstream out;
    out << "usage: " << program_ << " [options]\n" << about_ << "\n\noptions:\n";
    for (const Option& o : options_) {
      out << "  " << o.name;
      if (!std::holds_alternative<bool*>(o.target)) out << " " << value_name(o);
      out << "\n      " << o.help;
      if (o.least) out << ", at least " << *o.least;
      const std::string d = default_text(o);
      if (!d.empty()) out << " (default " << d << ")";
      out << "\n";
    }
    out << "  --help\n      this text\n";
    return out.str();
  }

 private:
  using Target = std::variant<int*, std::uint64_t*, double*, std::string*, bool*>;
  struct Option {
    std::string name;
    Target target;
    std::string help;
    std::vector<std::string> choices;
    std::optional<long> least;
  };

  SimFlags& add(std::string name, Target target, std::string help) {
    options_.push_back({std::move(name), target, std::move(help), {}, std::nullopt});
    return *this;
  }

  const Option* find(const std::string& name) const {
    for (const Option& o : options_) {
      if (o.name == name) return &o;
    }
    return nullptr;
  }

  [[noreturn]] void fail(const std::string& why) const {
    std::cerr << program_ << ": " << why << "\n" << usage();
    std::exit(2);
  }

  void set(const Option& o, const std::string& v) const {
    const auto bad = [&] { fail(o.name + " takes " + value_name(o) + ", not '" + v + "'"); };
    char* end = nullptr;
    errno = 0;
    if (auto* p = std::get_if<int*>(&o.target)) {
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || v.empty() || errno != 0 || n < -2147483647L || n > 2147483647L) bad();
      if (o.least && n < *o.least) fail(o.name + ": at least " + std::to_string(*o.least));
      **p = static_cast<int>(n);
    } else if (auto* u = std::get_if<std::uint64_t*>(&o.target)) {
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (*end != '\0' || v.empty() || v[0] == '-' || errno != 0) bad();
      **u = n;
    } else if (auto* d = std::get_if<double*>(&o.target)) {
      const double x = std::strtod(v.c_str(), &end);
      if (*end != '\0' || v.empty() || errno != 0) bad();
      **d = x;
    } else if (auto* s = std::get_if<std::string*>(&o.target)) {
      bool allowed = o.choices.empty();
      for (const std::string& c : o.choices) allowed = allowed || c == v;
      if (!allowed) bad();
      **s = v;
    }
  }

  static std::string value_name(const Option& o) {
    if (!o.choices.empty()) {
      std::string s;
      for (const std::string& c : o.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    if (std::holds_alternative<double*>(o.target)) return "X";
    if (std::holds_alternative<std::string*>(o.target)) return "TEXT";
    return "N";
  }

  static std::string default_text(const Option& o) {
    std::ostringstream out;
    if (auto* p = std::get_if<int*>(&o.target)) out << **p;
    if (auto* u = std::get_if<std::uint64_t*>(&o.target)) out << **u;
    if (auto* d = std::get_if<double*>(&o.target)) out << **d;
    if (auto* s = std::get_if<std::string*>(&o.target)) out << **s;
    return out.str();
  }

  std::string program_, about_;
  std::vector<Option> options_;
};

}  // namespace gpusweep::bench
