# Finds oneDNN's CPU library and headers directly, without oneDNN's own CMake config.
# Why: Debian's libdnnl-dev is built with the OpenCL GPU runtime, and its dnnl-config.cmake
# then requires OpenCL's headers and development library, which rnnx never compiles or links
# against (it uses the CPU engine only; libdnnl.so brings its own runtime dependencies).
# Finding the library itself keeps rnnx independent of how a distribution built oneDNN.
#
# Result: oneDNN_FOUND, oneDNN_VERSION, the imported target oneDNN::dnnl.
# Hints: oneDNN_ROOT (a prefix), or CMAKE_PREFIX_PATH.
find_path(oneDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(oneDNN_LIBRARY NAMES dnnl)
if(oneDNN_INCLUDE_DIR AND EXISTS "${oneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${oneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" rnnx_dnnl_version_lines
       REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define DNNL_VERSION_${part} ([0-9]+).*" "\\1" rnnx_dnnl_${part}
           "${rnnx_dnnl_version_lines}")
  endforeach()
  set(oneDNN_VERSION "${rnnx_dnnl_MAJOR}.${rnnx_dnnl_MINOR}.${rnnx_dnnl_PATCH}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(oneDNN
  REQUIRED_VARS oneDNN_LIBRARY oneDNN_INCLUDE_DIR
  VERSION_VAR oneDNN_VERSION
  REASON_FAILURE_MESSAGE "Debian: apt-get install libdnnl-dev (./scripts/install-deps.sh does)")
if(oneDNN_FOUND AND NOT TARGET oneDNN::dnnl)
  add_library(oneDNN::dnnl UNKNOWN IMPORTED)
  set_target_properties(oneDNN::dnnl PROPERTIES
    IMPORTED_LOCATION "${oneDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${oneDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(oneDNN_INCLUDE_DIR oneDNN_LIBRARY)
