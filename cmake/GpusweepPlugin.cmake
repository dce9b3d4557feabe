# gpusweep_add_plugin(NAME SOURCES src... [TORCH]): a workload plugin named
# NAME, built as gpusweep_NAME.so with hidden visibility so that only the
# entry symbol is exported, placed where the host looks for plugins.
#
# The same file serves the source tree (included by the top CMakeLists) and
# installed SDKs (included by gpusweepConfig.cmake, next to the version script
# it uses). Variables it honours when defined:
#   GPUSWEEP_PLUGIN_OUTPUT_DIR   where the built .so goes (in-tree: build/plugins)
#   GPUSWEEP_PLUGIN_INSTALL_DIR  where `cmake --install` puts it (in-tree: relative
#                                to the prefix; installed SDK: the plugin folder
#                                the installed gpusweep searches)

function(gpusweep_add_plugin name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES" ${ARGN})
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "gpusweep_add_plugin(${name}): a plugin name is lower-case letters, "
                        "digits and underscores, starting with a letter (it becomes "
                        "gpusweep_<name>.so and must equal the manifest's name)")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "gpusweep_add_plugin(${name}): no SOURCES given")
  endif()
  if(ARG_TORCH AND NOT TARGET gpusweep::torchkit)
    message(FATAL_ERROR "gpusweep_add_plugin(${name} TORCH): gpusweep::torchkit is missing; "
                        "this gpusweep was built without LibTorch support "
                        "(GPUSWEEP_BUILD_TORCH_PLUGINS=OFF), or find_package(gpusweep) was "
                        "asked only for COMPONENTS sdk")
  endif()
  # The version script sits beside this file, in the source tree and installed.
  set(map ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/gpusweep_plugin.map)
  set(target gpusweep_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME gpusweep_${name}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED GPUSWEEP_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GPUSWEEP_PLUGIN_OUTPUT_DIR})
  endif()
  target_compile_features(${target} PRIVATE cxx_std_17)
  if(ARG_TORCH)
    target_link_libraries(${target} PRIVATE gpusweep::torchkit)
    # An installed plugin still finds LibTorch (and a torch wheel's CUDA
    # runtime) where it was linked from: outside the system's library path.
    if(GPUSWEEP_TORCH_RPATH)
      set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH ${GPUSWEEP_TORCH_RPATH})
    endif()
    # Reuse torchkit's precompiled LibTorch headers when building in-tree.
    if(TARGET gpusweep_torchkit)
      target_precompile_headers(${target} REUSE_FROM gpusweep_torchkit)
    endif()
  else()
    target_link_libraries(${target} PRIVATE gpusweep::sdk)
  endif()
  # Refuse undefined symbols at link time instead of at dlopen time, and
  # export only the entry symbol. Not under Clang's sanitizers: their runtime
  # is linked into the executable that loads the plugin, not into the plugin.
  if(NOT (GPUSWEEP_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  target_link_options(${target} PRIVATE -Wl,--version-script=${map})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
  if(DEFINED GPUSWEEP_PLUGIN_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${GPUSWEEP_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
