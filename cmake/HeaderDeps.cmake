# CLI11 and nlohmann_json, the header-only libraries of the rnnx command (and of bench/ and the
# fuzzers), as the imported targets CLI11::CLI11 and nlohmann_json::nlohmann_json, found once
# here for every folder below. From third_party/ when scripts/stage-third-party.sh has copied
# them there (the sdist carries that folder, so a build from it needs nothing installed; the
# repository never holds third-party code), else from their CMake packages (Debian's
# libcli11-dev, nlohmann-json3-dev), else from the compiler's include path.
#
# Result: the two targets where found; for a staged copy RNNX_<package>_LICENSE, its licence,
# and RNNX_<package>_SOURCE, where the copy came from (what the wheel says it bundles).
get_filename_component(rnnx_third_party ${CMAKE_CURRENT_LIST_DIR}/../third_party ABSOLUTE)
set(RNNX_THIRD_PARTY_DIR ${rnnx_third_party} CACHE PATH
    "Staged header-only libraries (scripts/stage-third-party.sh)")

function(rnnx_header_dep target package probe)
  set(staged ${RNNX_THIRD_PARTY_DIR}/${package})
  if(EXISTS ${staged}/include/${probe})
    add_library(${target} INTERFACE IMPORTED)
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${staged}/include)
    file(STRINGS ${staged}/SOURCE source LIMIT_COUNT 1)
    set(RNNX_${package}_LICENSE ${staged}/LICENSE PARENT_SCOPE)
    set(RNNX_${package}_SOURCE "${source}" PARENT_SCOPE)
    set(where "third_party/${package} (${source})")
  else()
    find_package(${package} CONFIG QUIET)
    if(TARGET ${target})
      set(where "${${package}_DIR}")
    else()
      find_path(RNNX_${package}_INCLUDE_DIR ${probe})
      if(RNNX_${package}_INCLUDE_DIR)
        add_library(${target} INTERFACE IMPORTED)
        set_target_properties(${target} PROPERTIES
          INTERFACE_INCLUDE_DIRECTORIES ${RNNX_${package}_INCLUDE_DIR})
        set(where "${RNNX_${package}_INCLUDE_DIR}")
      endif()
    endif()
  endif()
  if(TARGET ${target})
    message(STATUS "rnnx: ${package} from ${where}")
  else()
    message(STATUS "rnnx: ${package} not found (scripts/stage-third-party.sh, or Debian's package)")
  endif()
endfunction()

rnnx_header_dep(CLI11::CLI11 CLI11 CLI/CLI.hpp)
rnnx_header_dep(nlohmann_json::nlohmann_json nlohmann_json nlohmann/json.hpp)
