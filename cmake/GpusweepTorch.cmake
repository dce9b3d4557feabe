# Finds LibTorch 2.x and, for a CUDA build of it, the CUDA toolkit.
#
# Where Torch comes from, first match wins:
#   1. CMAKE_PREFIX_PATH or Torch_DIR set by the user (an unpacked official
#      LibTorch distribution: -DCMAKE_PREFIX_PATH=/path/to/libtorch);
#   2. the torch wheel of a Python interpreter: GPUSWEEP_PYTHON if set, else
#      the project's .venv/bin/python3 (scripts/install-deps.sh makes it),
#      else python3 on PATH; torch.utils.cmake_prefix_path is appended to
#      CMAKE_PREFIX_PATH, after anything the user put there.
#
# A CUDA LibTorch needs the CUDA toolkit to compile against (its headers and
# nvcc, /usr/local/cuda or CUDAToolkit_ROOT): without one, configuring stops
# with the fix instead of building a CPU-only gpusweep by accident.
#
# Sets GPUSWEEP_TORCH_CUDA (ON for a CUDA LibTorch), GPUSWEEP_TORCH_SOURCE
# (where it came from, for doctor) and the usual TORCH_LIBRARIES.

set(GPUSWEEP_PYTHON "" CACHE FILEPATH
    "Python interpreter whose torch wheel provides LibTorch (default: .venv/bin/python3, then python3)")

set(GPUSWEEP_TORCH_SOURCE "CMAKE_PREFIX_PATH or Torch_DIR")
if(GPUSWEEP_TORCH_FROM_PYTHON AND Torch_DIR)
  set(GPUSWEEP_TORCH_SOURCE "the torch wheel of ${GPUSWEEP_TORCH_FROM_PYTHON}")
endif()
# A LibTorch the user pointed at (CMAKE_PREFIX_PATH, Torch_DIR) comes first.
find_path(_gpusweep_torch_config_dir TorchConfig.cmake PATH_SUFFIXES share/cmake/Torch Torch
          HINTS ${Torch_DIR} NO_CACHE NO_SYSTEM_ENVIRONMENT_PATH NO_CMAKE_SYSTEM_PATH)
if(NOT _gpusweep_torch_config_dir)
  set(_gpusweep_pythons)
  if(GPUSWEEP_PYTHON)
    list(APPEND _gpusweep_pythons ${GPUSWEEP_PYTHON})
  else()
    if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python3)
      list(APPEND _gpusweep_pythons ${CMAKE_SOURCE_DIR}/.venv/bin/python3)
    endif()
    find_program(_gpusweep_path_python NAMES python3)
    if(_gpusweep_path_python)
      list(APPEND _gpusweep_pythons ${_gpusweep_path_python})
    endif()
  endif()
  foreach(_py IN LISTS _gpusweep_pythons)
    execute_process(
      COMMAND ${_py} -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _gpusweep_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET RESULT_VARIABLE _gpusweep_rc)
    if(_gpusweep_rc EQUAL 0 AND EXISTS "${_gpusweep_torch_prefix}/Torch/TorchConfig.cmake")
      list(APPEND CMAKE_PREFIX_PATH ${_gpusweep_torch_prefix})
      set(_gpusweep_torch_config_dir ${_gpusweep_torch_prefix}/Torch)
      set(GPUSWEEP_TORCH_SOURCE "the torch wheel of ${_py}")
      set(GPUSWEEP_TORCH_FROM_PYTHON ${_py} CACHE INTERNAL "the Python whose torch wheel gave LibTorch")
      break()
    endif()
  endforeach()
endif()

# Neither: whatever find_package(Torch) would find in the system's prefixes.
if(NOT _gpusweep_torch_config_dir)
  find_path(_gpusweep_torch_config_dir TorchConfig.cmake PATH_SUFFIXES share/cmake/Torch Torch
            NO_CACHE)
endif()

# Is the LibTorch about to be found a CUDA build? libtorch_cuda beside its
# TorchConfig, looked for before find_package(Torch): Torch's own config
# stops with a generic message when it cannot find CUDA.
set(_gpusweep_torch_is_cuda OFF)
if(_gpusweep_torch_config_dir)
  get_filename_component(_gpusweep_torch_root "${_gpusweep_torch_config_dir}/../../.." ABSOLUTE)
  if(EXISTS ${_gpusweep_torch_root}/lib/libtorch_cuda.so)
    set(_gpusweep_torch_is_cuda ON)
  endif()
endif()

if(_gpusweep_torch_is_cuda)
  if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    message(FATAL_ERROR
      "LibTorch at ${_gpusweep_torch_root} is a CUDA build, but no CUDA toolkit was found to "
      "compile against (looked for nvcc in CUDAToolkit_ROOT, /usr/local/cuda and PATH). "
      "Install the CUDA toolkit (its headers, nvcc and libraries; /usr/local/cuda), or pass "
      "-DCUDAToolkit_ROOT=/path/to/cuda. To build for CPU only, point CMAKE_PREFIX_PATH at a "
      "CPU-only LibTorch instead.")
  endif()
  # Torch's cuda.cmake finds nvcc through CUDA_TOOLKIT_ROOT_DIR / CMAKE_CUDA_COMPILER.
  if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  # No .cu files here: the architecture list only silences Torch's detection.
  if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
  endif()
  get_filename_component(GPUSWEEP_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}/.." ABSOLUTE)
endif()

find_package(Torch 2.0 REQUIRED)

if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(GPUSWEEP_TORCH_CUDA ON)
else()
  set(GPUSWEEP_TORCH_CUDA OFF)
endif()
include(GpusweepTorchRuntime)
gpusweep_torch_runtime()
if(GPUSWEEP_TORCH_WHEEL_CUDA)
  set(GPUSWEEP_TORCH_SOURCE "${GPUSWEEP_TORCH_SOURCE}, its CUDA libraries from ${GPUSWEEP_TORCH_WHEEL_CUDA}")
endif()

if(_gpusweep_torch_is_cuda AND NOT GPUSWEEP_TORCH_CUDA)
  message(FATAL_ERROR "LibTorch at ${_gpusweep_torch_root} has libtorch_cuda.so but its CMake "
                      "package defined no CUDA libraries; this LibTorch install looks broken")
endif()

# The wheel's C++ ABI must match ours for std::string and friends to cross
# between torchkit, the plugins and LibTorch.
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR "LibTorch at ${_gpusweep_torch_root} was built with the pre-C++11 "
                      "libstdc++ ABI (_GLIBCXX_USE_CXX11_ABI=0); gpusweep builds with the "
                      "C++11 ABI. Use a cxx11-ABI LibTorch (every torch wheel since 2.7, or the "
                      "'cxx11 ABI' LibTorch download).")
endif()

message(STATUS "gpusweep: LibTorch ${Torch_VERSION} from ${GPUSWEEP_TORCH_SOURCE}"
               " (${_gpusweep_torch_root}), CUDA build: ${GPUSWEEP_TORCH_CUDA}"
               )
if(GPUSWEEP_TORCH_CUDA)
  message(STATUS "gpusweep: CUDA toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}/..; "
                 "the CUDA paths of torchkit and the plugins are compiled")
endif()
