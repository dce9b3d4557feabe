// Shell words: quoted for scripts, left bare in printed commands when safe.
#include "support/shell.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace gpusweep::host;

TEST_CASE("a shell word survives quoting", "[support]") {
  for (const std::string w : {"plain", "with space", "it's", "'", "$(rm -rf /)", "a\"b"}) {
    INFO(w);
    const std::string cmd = "test \"$(printf '%s' " + shell_quote(w) + ")\" = " + shell_quote(w);
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(shell_quote(w).front() == '\'');
  }
}

TEST_CASE("a printed command quotes only the words that need it", "[support]") {
  CHECK(shell_word("my_model/build") == "my_model/build");
  CHECK(shell_word("--db=results.db") == "--db=results.db");
  for (const std::string w : {"with space", "it's", "$HOME", "a;b", ""}) {
    INFO(w);
    CHECK(shell_word(w) == shell_quote(w));
    const std::string cmd = "test \"$(printf '%s' " + shell_word(w) + ")\" = " + shell_quote(w);
    CHECK(std::system(cmd.c_str()) == 0);
  }
}
