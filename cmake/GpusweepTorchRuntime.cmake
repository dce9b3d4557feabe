# gpusweep_torch_runtime(): after find_package(Torch), makes what links
# LibTorch load the same libraries LibTorch itself loads. Used by gpusweep's
# own build (GpusweepTorch.cmake) and by installed SDKs (gpusweepConfig.cmake)
# so that out-of-tree plugins get the same treatment.
#
# A torch wheel carries its own CUDA libraries (site-packages/nvidia/*/lib,
# found through LibTorch's RPATH). A plugin must load those same copies, not
# the CUDA toolkit's (another minor version, an older NCCL): Torch's CUDA
# runtime targets are pointed at the wheel's files, and the linker resolves
# LibTorch's own dependencies in the wheel's folders first.
#
# Sets GPUSWEEP_TORCH_WHEEL_CUDA (the wheel's nvidia folder, or empty) and
# GPUSWEEP_TORCH_RPATH (the folders an installed plugin must search: LibTorch's
# lib folder and the wheel's CUDA runtime folder).
macro(gpusweep_torch_runtime)
  set(GPUSWEEP_TORCH_WHEEL_CUDA "")
  set(GPUSWEEP_TORCH_RPATH "${TORCH_INSTALL_PREFIX}/lib")
  get_filename_component(_gpusweep_site "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  if(TARGET torch_cuda AND IS_DIRECTORY ${_gpusweep_site}/nvidia)
    set(GPUSWEEP_TORCH_WHEEL_CUDA ${_gpusweep_site}/nvidia)
    file(GLOB _gpusweep_wheel_lib_dirs LIST_DIRECTORIES true ${_gpusweep_site}/nvidia/*/lib)
    foreach(_gpusweep_lib cudart nvrtc)
      file(GLOB _gpusweep_file ${_gpusweep_site}/nvidia/*/lib/lib${_gpusweep_lib}.so.[0-9]*)
      if(NOT _gpusweep_file)
        continue()
      endif()
      list(GET _gpusweep_file 0 _gpusweep_file)
      if(TARGET CUDA::${_gpusweep_lib})
        set_target_properties(CUDA::${_gpusweep_lib} PROPERTIES IMPORTED_LOCATION ${_gpusweep_file})
        foreach(_gpusweep_config RELEASE DEBUG RELWITHDEBINFO MINSIZEREL NOCONFIG)
          get_target_property(_gpusweep_loc CUDA::${_gpusweep_lib} IMPORTED_LOCATION_${_gpusweep_config})
          if(_gpusweep_loc)
            set_target_properties(CUDA::${_gpusweep_lib} PROPERTIES
                                  IMPORTED_LOCATION_${_gpusweep_config} ${_gpusweep_file})
          endif()
        endforeach()
      endif()
      # Torch also lists nvrtc by its path in the toolkit.
      list(TRANSFORM TORCH_LIBRARIES REPLACE "^.*/lib${_gpusweep_lib}\\.so(\\.[0-9.]*)?$"
           "${_gpusweep_file}")
      get_filename_component(_gpusweep_dir ${_gpusweep_file} DIRECTORY)
      list(APPEND GPUSWEEP_TORCH_RPATH ${_gpusweep_dir})
    endforeach()
    list(REMOVE_DUPLICATES GPUSWEEP_TORCH_RPATH)
    string(REPLACE ";" ":" _gpusweep_rpath_link "${_gpusweep_wheel_lib_dirs}")
    get_target_property(_gpusweep_opts torch INTERFACE_LINK_OPTIONS)
    if(NOT _gpusweep_opts MATCHES "rpath-link")
      set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS
                   "LINKER:-rpath-link,${_gpusweep_rpath_link}")
    endif()
  endif()
endmacro()
