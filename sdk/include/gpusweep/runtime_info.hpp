// What a workload's runtime() reports (the ABI's runtime JSON): the LibTorch
// and machine it runs on, defined once. torchkit fills it, the python plugin
// adds its interpreter's, the worker adds the devices it was given; the host
// reads the environment table, doctor, history's versions and a trial's
// device through from_json. Every field is optional (a workload reports what
// it knows; "{}" is valid); keys this struct does not name are kept in
// `extra`, so that a report read and written again is the same JSON.
// Header-only and free of LibTorch, as common_settings.hpp: the host reads it.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace gpusweep {

namespace runtime_detail {

// A nested struct of fields (RuntimeCuda), not a value written as it is.
template <class T>
constexpr bool is_struct_v =
    std::is_class_v<T> && !std::is_same_v<T, std::string> && !std::is_same_v<T, nlohmann::json>;

template <class T>
std::optional<T> as(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (v.is_number()) return v.get<int64_t>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else {
    if (v.is_object()) return T::from_json(v);
  }
  return std::nullopt;
}

// The struct's fields over `j`; what they do not name stays as it was.
template <class S>
nlohmann::json write(const S& s, nlohmann::json j) {
  S::fields(s, [&j](const char* key, const auto& member) {
    if (!member) return;
    using T = typename std::decay_t<decltype(member)>::value_type;
    if constexpr (is_struct_v<T>) {
      j[key] = member->to_json();
    } else {
      j[key] = *member;
    }
  });
  return j;
}

// Reads each field that has the right type; the rest of `j` into *rest.
template <class S>
S read(const nlohmann::json& j, nlohmann::json* rest) {
  S s;
  if (!j.is_object()) return s;
  std::vector<std::string> taken;
  S::fields(s, [&](const char* key, auto& member) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    using T = typename std::decay_t<decltype(member)>::value_type;
    member = as<T>(*it);
    if (member) taken.emplace_back(key);
  });
  if (rest != nullptr) {
    for (const auto& [key, value] : j.items()) {
      if (std::find(taken.begin(), taken.end(), key) == taken.end()) (*rest)[key] = value;
    }
  }
  return s;
}

}  // namespace runtime_detail

// The CUDA versions: what LibTorch was built with, what torchkit was
// compiled against, and the driver's ("" when none is installed).
struct RuntimeCuda {
  std::optional<std::string> torch_cuda;   // LibTorch's cudart ("13.0")
  std::optional<std::string> torch_cudnn;  // LibTorch's cuDNN
  std::optional<std::string> toolkit;      // the headers torchkit was compiled against
  std::optional<std::string> driver_cuda;  // the driver's CUDA version

  template <class Self, class F>
  static void fields(Self& s, F&& f) {
    f("torch_cuda", s.torch_cuda);
    f("torch_cudnn", s.torch_cudnn);
    f("toolkit", s.toolkit);
    f("driver_cuda", s.driver_cuda);
  }
  nlohmann::json to_json() const { return runtime_detail::write(*this, nlohmann::json::object()); }
  static RuntimeCuda from_json(const nlohmann::json& j) {
    return runtime_detail::read<RuntimeCuda>(j, nullptr);
  }
};

struct RuntimeInfo {
  std::optional<std::string> torch_version;   // "2.15.0"
  std::optional<std::string> torch_library;   // the file LibTorch was loaded from
  std::optional<std::string> cpu_capability;  // the kernels ATen dispatches to: AVX2, AVX512...
  std::optional<bool> cuda_build;             // torchkit compiled with its CUDA paths
  std::optional<RuntimeCuda> cuda;
  std::optional<bool> cuda_available;
  std::optional<std::string> blas;  // the BLAS in use ("mkl", "openblas-pthread"...)
  std::optional<int64_t> threads;   // intra-op threads
  std::optional<int64_t> interop_threads;
  // [{index, name, pci_bus_id, uuid, memory_bytes, compute_capability}]
  std::optional<nlohmann::json> devices;
  // The python plugin's: the Python it embeds, the interpreter, its packages.
  std::optional<std::string> python;
  std::optional<std::string> python_interpreter;
  std::optional<nlohmann::json> python_packages;    // {name: version}
  std::optional<bool> counts_flops;                 // a script workload reports flops_per_step
  std::optional<std::string> cuda_visible_devices;  // the worker's, when it set them
  nlohmann::json extra = nlohmann::json::object();  // what the workload reports besides

  template <class Self, class F>
  static void fields(Self& s, F&& f) {
    f("torch_version", s.torch_version);
    f("torch_library", s.torch_library);
    f("cpu_capability", s.cpu_capability);
    f("cuda_build", s.cuda_build);
    f("cuda", s.cuda);
    f("cuda_available", s.cuda_available);
    f("blas", s.blas);
    f("threads", s.threads);
    f("interop_threads", s.interop_threads);
    f("devices", s.devices);
    f("python", s.python);
    f("python_interpreter", s.python_interpreter);
    f("python_packages", s.python_packages);
    f("counts_flops", s.counts_flops);
    f("cuda_visible_devices", s.cuda_visible_devices);
  }
  nlohmann::json to_json() const {
    return runtime_detail::write(*this, extra.is_object() ? extra : nlohmann::json::object());
  }
  // A field of the wrong type reads as missing (and stays in extra).
  static RuntimeInfo from_json(const nlohmann::json& j) {
    nlohmann::json rest = nlohmann::json::object();
    RuntimeInfo r = runtime_detail::read<RuntimeInfo>(j, &rest);
    r.extra = std::move(rest);
    return r;
  }
};

}  // namespace gpusweep
