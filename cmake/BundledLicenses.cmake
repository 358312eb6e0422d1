# The licences of the third-party code that rnnx's binaries hold, installed with the wheel
# (RNNX_WHEEL) into rnnx/licenses/<name>.txt with a README.txt saying what each one covers.
# rnnx_bundled_license(NAME FILE WHAT) records one from anywhere in the project (a header-only
# library compiled in, pybind11 in the extension); a toolchain file lists the runtimes it
# links statically in RNNX_TOOLCHAIN_LICENSES ("NAME|FILE|WHAT" each: cmake/toolchains/zig.cmake).
# rnnx_install_bundled_licenses(), called once at the end, installs them all. Outside wheel
# builds both do nothing: a system install links the system's libraries, which carry their own.
function(rnnx_bundled_license name file what)
  if(NOT RNNX_WHEEL)
    return()
  endif()
  if(NOT file OR NOT EXISTS "${file}")
    message(FATAL_ERROR "RNNX_WHEEL: the wheel would hold ${name} (${what}) without its "
                        "licence (looked for: \"${file}\")")
  endif()
  set_property(GLOBAL APPEND PROPERTY RNNX_BUNDLED_LICENSE_NAMES ${name})
  set_property(GLOBAL PROPERTY RNNX_BUNDLED_LICENSE_FILE_${name} "${file}")
  set_property(GLOBAL PROPERTY RNNX_BUNDLED_LICENSE_WHAT_${name} "${what}")
endfunction()

function(rnnx_install_bundled_licenses)
  if(NOT RNNX_WHEEL)
    return()
  endif()
  set(dir rnnx/licenses)
  foreach(entry IN LISTS RNNX_TOOLCHAIN_LICENSES)
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 name)
    list(GET entry 1 file)
    list(GET entry 2 what)
    rnnx_bundled_license(${name} "${file}" "${what}")
  endforeach()
  get_property(names GLOBAL PROPERTY RNNX_BUNDLED_LICENSE_NAMES)
  string(CONCAT readme "Licences of the third-party code in this package's binaries (rnnx's "
         "own licence, where the project has one, is in the package's .dist-info/licenses).\n\n")
  foreach(name IN LISTS names)
    get_property(file GLOBAL PROPERTY RNNX_BUNDLED_LICENSE_FILE_${name})
    get_property(what GLOBAL PROPERTY RNNX_BUNDLED_LICENSE_WHAT_${name})
    install(FILES ${file} DESTINATION ${dir} RENAME ${name}.txt)
    string(APPEND readme "${name}.txt: ${what}\n")
  endforeach()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/licenses-README.txt "${readme}")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/licenses-README.txt DESTINATION ${dir} RENAME README.txt)
  list(JOIN names ", " names)
  message(STATUS "rnnx: bundled licences: ${names}")
endfunction()
