# librnnx_cuda.so: the cuda backend as a backend plugin (src/core/backend_plugin_abi.h), for
# the rnnx-cuda wheel (packaging/cuda/pyproject.toml, docs/packaging.md). One shared library
# of its own copy of core, cuDNN's rules, the cuda backend and the plugin's entry
# (src/cuda/plugin); it exports the entry alone, links the CUDA runtime and the C++ runtime
# statically, and needs libcudnn.so.9 (cuBLAS is dlopened by the plans that use it), found
# through a RUNPATH relative to itself in NVIDIA's pip wheels beside it in site-packages:
# nvidia/cudnn/lib (nvidia-cudnn-cu13) and nvidia/cu13/lib (nvidia-cublas), as PyTorch's
# libtorch_cuda.so does. No path of the building machine goes into it.
#
# rnnx_add_cuda_plugin(): the target rnnx_cuda_plugin; needs RNNX_HAVE_CUDA.
function(rnnx_add_cuda_plugin)
  set(src ${PROJECT_SOURCE_DIR}/src)
  file(GLOB sources CONFIGURE_DEPENDS ${src}/core/*.cpp ${src}/cuda/rules/*.cpp ${src}/cuda/*.cpp
       ${src}/cuda/*.cu ${src}/cuda/plugin/*.cpp)
  add_library(rnnx_cuda_plugin SHARED ${sources})
  # Its core's backend list is the cuda backend alone (the registry's generated list).
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/cuda_plugin)
  file(CONFIGURE OUTPUT ${gen}/core/built_backends.inc
       CONTENT "// Written by cmake/CudaPlugin.cmake: the backends of the cuda plugin.\nRNNX_BACKEND(cuda)\n")
  target_include_directories(rnnx_cuda_plugin PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${CMAKE_CURRENT_BINARY_DIR}/include ${src} ${gen} ${RNNX_CUDNN_INCLUDE_DIR})
  # RNNX_INSIDE_PLUGIN: its core loads no plugins of its own.
  target_compile_definitions(rnnx_cuda_plugin PRIVATE RNNX_BUILD_TYPE="${CMAKE_BUILD_TYPE}"
                             RNNX_INSIDE_PLUGIN=1)
  target_compile_options(rnnx_cuda_plugin PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${RNNX_WARNINGS}>
                         $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  target_link_libraries(rnnx_cuda_plugin PRIVATE CUDA::cudart_static ${CMAKE_DL_LIBS}
                        ${RNNX_CUDNN_LIBRARY})
  # The C++ runtime inside: the plugin then runs beside any libstdc++ (or librnnx's libc++)
  # and needs only glibc and libgcc_s from the system. libgcc_s stays shared (every manylinux
  # policy allows it): GCC 12's static unwinder would import _dl_find_object@GLIBC_2.35.
  target_link_options(rnnx_cuda_plugin PRIVATE -static-libstdc++
    -Wl,--no-undefined -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/librnnx_cuda.map)
  string(REGEX MATCH "^[0-9]+" cuda_major "${CUDAToolkit_VERSION}")
  set_target_properties(rnnx_cuda_plugin PROPERTIES
    OUTPUT_NAME rnnx_cuda LINKER_LANGUAGE CXX
    CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/librnnx_cuda.map
    BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "$ORIGIN/../../nvidia/cudnn/lib;$ORIGIN/../../nvidia/cu${cuda_major}/lib")
endfunction()

# The licences of what the plugin holds of other projects, into rnnx_cuda/licenses with a
# README.txt naming each: the CUDA runtime (cudart_static; the toolkit's EULA lets
# applications redistribute it) and GCC's libstdc++ (static; the GCC Runtime Library
# Exception). Looked for beside the toolkit (its EULA.txt, or the licence of a toolkit laid
# out from NVIDIA's wheels) and in Debian's documentation; one not found is named in the README
# and a warning, never silently left out.
function(rnnx_install_cuda_plugin_licenses destination)
  get_filename_component(toolkit ${CUDAToolkit_BIN_DIR} DIRECTORY)
  file(GLOB cudart ${toolkit}/EULA.txt ${toolkit}/doc/EULA.txt
       ${toolkit}/dist-info/nvidia_cuda_runtime-*/licenses/License.txt)
  string(REGEX MATCH "^[0-9]+" gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
  file(GLOB libstdcxx /usr/share/doc/gcc-${gcc_major}-base/copyright)
  set(readme "Licences of the third-party code in librnnx_cuda.so (rnnx's own licence, where the project has one, is in the package's .dist-info/licenses). cuDNN and cuBLAS are not in it: NVIDIA's wheels bring them with their licences.\n\n")
  foreach(entry "cuda_runtime|${cudart}|the CUDA runtime, linked statically (cudart_static)"
                "libstdcxx|${libstdcxx}|GCC's libstdc++, linked statically (GPL-3.0 with the GCC Runtime Library Exception)")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 name)
    list(GET entry 1 file)
    list(GET entry 2 what)
    if(file)
      list(GET file 0 file)  # the first of the globbed places
    endif()
    if(file AND EXISTS "${file}")
      install(FILES ${file} DESTINATION ${destination} RENAME ${name}.txt)
      string(APPEND readme "${name}.txt: ${what}\n")
    else()
      message(WARNING "rnnx: the licence of ${what} was not found; the wheel names it without its text")
      string(APPEND readme "${name} (its licence text was not found at build time): ${what}\n")
    endif()
  endforeach()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cuda_plugin/README.txt "${readme}")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cuda_plugin/README.txt DESTINATION ${destination})
endfunction()
