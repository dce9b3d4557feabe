// `history --confirm`'s lines: each change point's check (run/confirm.hpp)
// and what it found.
#include "cli/run_commands.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"
#include "support/format.hpp"

namespace gpusweep::host {

int confirm_change_points(const HistoryResult& result, const ConfirmOptions& options,
                          std::ostream& out) {
  std::vector<std::string> lines;
  int confirmed = 0;
  const Registry registry(options.plugin_paths);
  for (size_t i = 0; i < result.series.size(); ++i) {
    const HistorySeries& s = result.series[i];
    for (const ChangePoint& cp : s.change_points) {
      const HistoryPoint& before = s.points[cp.index - 1];
      const HistoryPoint& after = s.points[cp.index];
      std::string line = "series " + std::to_string(i + 1) + ", the change at run " +
                         std::to_string(after.run_id) + " (" + change_words(cp.ratio) + "): ";
      if (before.plugin_hash == after.plugin_hash) {
        lines.push_back(line +
                        "the same build on both sides: an environment change or the "
                        "machine, no builds to re-measure");
        continue;
      }
      try {
        CheckRun check;
        check.job = confirm_job(registry, before, after, options);
        check.on_report = [&](const CheckRunReport& r) {
          if (r.pairs.empty()) {
            line += "undecided: the check measured nothing";
            return;
          }
          const ChangeConfirmation c = confirm_change(cp.ratio, r.pairs.front());
          line += c.text;
          confirmed += c.call == ConfirmCall::confirmed;
        };
        out << "\nconfirming " << line << "a check of " << before.plugin_path << " against "
            << after.plugin_path << " into " << after.source << "\n";
        if (run_check(std::move(check)) == kExitInterrupted) return -1;
      } catch (const UsageError& e) {
        line += std::string("cannot confirm: ") + e.what();
      }
      lines.push_back(line);
    }
  }
  out << "\nconfirmations (history --confirm):\n";
  if (lines.empty()) out << "  no change points to confirm\n";
  for (const auto& l : lines) out << "  " << l << "\n";
  return confirmed;
}

}  // namespace gpusweep::host
