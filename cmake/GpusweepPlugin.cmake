# gpusweep_add_plugin(NAME SOURCES src... [TORCH]): a workload plugin named
# NAME, built as gpusweep_NAME.so with hidden visibility so that only the
# entry symbol is exported, placed where the host looks for plugins.
set(GPUSWEEP_PLUGIN_MAP ${CMAKE_CURRENT_LIST_DIR}/gpusweep_plugin.map)

function(gpusweep_add_plugin name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES" ${ARGN})
  set(target gpusweep_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME gpusweep_${name}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED GPUSWEEP_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GPUSWEEP_PLUGIN_OUTPUT_DIR})
  endif()
  target_compile_features(${target} PRIVATE cxx_std_17)
  if(ARG_TORCH)
    target_link_libraries(${target} PRIVATE gpusweep::torchkit)
    # Reuse torchkit's precompiled LibTorch headers when building in-tree.
    if(TARGET gpusweep_torchkit)
      target_precompile_headers(${target} REUSE_FROM gpusweep_torchkit)
    endif()
  else()
    target_link_libraries(${target} PRIVATE gpusweep::sdk)
  endif()
  # Refuse undefined symbols at link time instead of at dlopen time, and
  # export only the entry symbol.
  target_link_options(${target} PRIVATE -Wl,--no-undefined
    -Wl,--version-script=${GPUSWEEP_PLUGIN_MAP})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${GPUSWEEP_PLUGIN_MAP})
  if(DEFINED GPUSWEEP_PLUGIN_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${GPUSWEEP_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
