// `gpusweep doctor`'s text view; see doctor_view.hpp.
#include "report/doctor_view.hpp"

#include "support/format.hpp"

#include <sstream>
#include <vector>

namespace gpusweep::host {

namespace {

// The report's text, one section a method, each reading its part of the JSON
// document (analysis/doctor.hpp writes it).
class DoctorText {
 public:
  explicit DoctorText(bool use_colour) : use_colour_(use_colour) {}

  std::string render(const nlohmann::json& doc) {
    out_ << "machine\n";
    machine(doc);
    out_ << "\nlibtorch\n";
    libtorch(doc);
    out_ << "\ncuda\n";
    cuda(doc);
    if (doc.contains("python")) {
      out_ << "\npython (the Python workloads' and scripts' interpreter)\n";
      python(doc.at("python"));
    }
    plugins(doc);
    out_ << "\n";
    verdict(doc);
    return out_.str();
  }

 private:
  // format.hpp's colour() where colour is wanted (it also checks the terminal).
  std::string paint(const std::string& text, const char* code) const {
    return use_colour_ ? colour(text, code) : text;
  }

  void line(const std::string& key, const std::string& value) {
    const std::string pad(key.size() < 14 ? 14 - key.size() : 1, ' ');
    // Continuation lines of a wrapped value start under its first line.
    std::string indented;
    for (char c : value) {
      indented += c;
      if (c == '\n') indented += std::string(2 + key.size() + pad.size(), ' ');
    }
    out_ << "  " << key << pad << indented << "\n";
  }

  void machine(const nlohmann::json& doc) {
    const auto& m = doc.at("machine");
    out_ << "machine\n";
    line("cpu", m.value("cpu", "unknown"));
    const int physical = m.value("physical_cores", 0);
    line("cores", std::to_string(m.value("logical_cores", 0)) + " logical" +
                      (physical > 0 ? ", " + std::to_string(physical) + " physical" : ""));
    line("kernel", m.value("kernel", ""));
  }

  void libtorch(const nlohmann::json& doc) {
    const auto& lt = doc.at("libtorch");
    if (!lt.value("probed", false)) {
      line("status", lt.value("status", "not probed"));
    } else {
      line("probed with", "plugin " + lt.value("plugin", "?") + " (in a worker process)");
      line("version",
           lt.value("version", "?") + (lt.value("cuda_build", false)
                                           ? ", CUDA build (for CUDA " + lt.value("cuda", "?") +
                                                 ", cuDNN " + lt.value("cudnn", "?") + ")"
                                           : ", CPU-only build (no CUDA)"));
      if (!lt.value("library", "").empty()) line("loaded from", lt.value("library", ""));
      if (!lt.value("cpu_capability", "").empty()) {
        line("cpu kernels", lt.value("cpu_capability", "") + " (ATen's dispatch)");
      }
      line("threads", std::to_string(lt.value("threads", 0)) + " intra-op, " +
                          std::to_string(lt.value("interop_threads", 0)) +
                          " inter-op (a sweep's `threads` setting overrides)");
      if (lt.contains("threads_advice")) line("", lt.value("threads_advice", ""));
      if (lt.contains("probe_error")) {
        line("probe", paint("FAILED", "31") + ": " + lt.value("probe_error", ""));
      }
      if (lt.contains("blas")) {
        const auto& blas = lt.at("blas");
        line("blas",
             (blas.value("slow", false) ? paint(blas.value("name", "?"), "31")
                                        : blas.value("name", "?")) +
                 (blas.value("path", "").empty() ? "" : " (" + blas.value("path", "") + ")"));
        if (!blas.value("alternative", "").empty()) {
          line("libblas.so.3", "-> " + blas.value("alternative", ""));
        }
      }
      if (!lt.value("openmp", "").empty()) line("openmp", lt.value("openmp", ""));
      for (const auto& mm : lt.value("matmul", nlohmann::json::array())) {
        line("matmul",
             fixed(mm.value("gflops", 0.0), 1) + " GFLOP/s on " + mm.value("device", "?") +
                 " (float32 " + std::to_string(mm.value("n", 0)) + "x" +
                 std::to_string(mm.value("n", 0)) + ", " + std::to_string(mm.value("threads", 0)) +
                 " threads, " + std::to_string(mm.value("products", 0)) + " products in " +
                 fixed(mm.value("seconds", 0.0), 2) + " s)");
      }
      if (lt.contains("matmul_note")) line("matmul", lt.value("matmul_note", ""));
    }
  }

  void cuda(const nlohmann::json& doc) {
    const auto& c = doc.at("cuda");
    if (!c.value("toolkit", "").empty()) {
      line("toolkit", "CUDA " + c.value("toolkit", "") +
                          " (the headers the plugins were compiled "
                          "against)");
    }
    line("driver", c.value("driver", "").empty() ? "none" : "CUDA " + c.value("driver", ""));
    if (c.contains("nvml")) {
      const auto& n = c.at("nvml");
      line("nvml", n.value("loaded", false)
                       ? n.value("library", "") + ", driver " + n.value("driver_version", "")
                       : "none: " + n.value("why", ""));
    }
    for (const auto& g : c.value("nvml_devices", nlohmann::json::array())) {
      line("nvml " + std::to_string(g.value("index", 0)),
           g.value("name", "?") + ", " + human_bytes(g.value("memory_bytes", 0.0)) +
               ", compute capability " + g.value("compute_capability", "?"));
    }
    for (const auto& d : c.value("devices", nlohmann::json::array())) {
      line("cuda:" + std::to_string(d.value("index", 0)),
           d.value("name", "?") + ", " + human_bytes(d.value("memory_bytes", 0.0)) +
               ", compute capability " + d.value("compute_capability", "?") +
               (d.value("pci_bus_id", "").empty() ? "" : ", " + d.value("pci_bus_id", "")));
    }
    if (!c.value("verdict", "").empty()) line("for a sweep", wrap(c.value("verdict", ""), 64));
    if (!c.value("monitoring", "").empty()) line("monitoring", c.value("monitoring", ""));
  }

  void python(const nlohmann::json& py) {
    const std::string interpreter = py.value("interpreter", "");
    if (!interpreter.empty()) {
      const std::string version = py.value("version", "");
      line("interpreter", interpreter + (version.empty() ? "" : " (Python " + version + ")"));
    }
    if (py.contains("torch") && py["torch"].is_object()) {
      line("torch", py["torch"].value("version", "") + " from " + py["torch"].value("lib", ""));
    }
    if (py.contains("packages") && py["packages"].is_object()) {
      std::string list;
      for (const auto& [name, version] : py["packages"].items()) {
        list += (list.empty() ? "" : ", ") + name + " " + version.get<std::string>();
      }
      line("packages",
           list.empty() ? "no training library (transformers, lightning, accelerate)" : list);
    }
    const std::string verdict = py.value("verdict", "");
    const bool ready = verdict.rfind("ready", 0) == 0;
    line("verdict", ready ? verdict : paint(verdict, "31"));
  }

  void plugins(const nlohmann::json& doc) {
    const auto plugins = doc.value("plugins", nlohmann::json::array());
    out_ << "\nplugins (" << plugins.size() << " found)\n";
    if (plugins.empty()) {
      out_ << "  none on the plugin path (" << doc.value("plugin_path", "") << ")\n";
    } else {
      Table t({"plugin", "loads", "version", "abi", "runtime", "file"});
      for (const auto& p : plugins) {
        const bool loads = p.value("loads", false);
        const std::string torch = p.value("torch_version", "");
        t.add_row({p.value("name", ""), loads ? paint("yes", "32") : paint("NO", "31"),
                   p.value("version", ""), p.value("abi", ""),
                   loads ? (torch.empty() ? "no LibTorch" : "LibTorch " + torch)
                         : wrap(p.value("error", ""), 50),
                   p.value("file", "")});
      }
      out_ << t.render();
    }
  }

  void verdict(const nlohmann::json& doc) {
    const auto warnings = doc.value("warnings", std::vector<std::string>{});
    const auto problems = doc.value("problems", std::vector<std::string>{});
    for (const auto& w : warnings) out_ << paint("warning", "33") << ": " << w << "\n";
    for (const auto& e : problems) out_ << paint("problem", "31") << ": " << e << "\n";
    if (problems.empty()) {
      out_ << "ready to sweep"
           << (warnings.empty() ? ""
                                : " (" + std::to_string(warnings.size()) + " warning(s) above)")
           << "\n";
    } else {
      out_ << problems.size() << " problem(s): sweeps will fail until they are fixed\n";
    }
  }

  bool use_colour_;
  std::ostringstream out_;
};

}  // namespace

std::string render_doctor(const nlohmann::json& doc, bool use_colour) {
  return DoctorText(use_colour).render(doc);
}

}  // namespace gpusweep::host
