// Words for a POSIX shell: what gpusweep writes into scripts and prints as
// commands to copy.
#pragma once

#include <string>

namespace gpusweep::host {

// `word` quoted for a POSIX shell ('...', with ' written as '\'').
std::string shell_quote(const std::string& word);

// `word` as it is when the shell would read it so (letters, digits and
// -_./:=@+,%), else shell_quote(word): for commands people read and copy.
std::string shell_word(const std::string& word);

}  // namespace gpusweep::host
