# oneDNN for the cpu backend's float32 GEMMs on unpacked operands (dnnl_sgemm: the
# `onednn-sgemm` engine, docs/cpu.md), as RNNX_WITH_ONEDNN says: AUTO uses it when found, ON
# requires it, OFF leaves it out (rnnx's own kernels then run everything: the packed AVX-512
# engine, and the `plain` loops below AVX-512). bench/'s oneDNN peer needs it too.
#
# Result: RNNX_HAVE_ONEDNN (TRUE/FALSE), the imported target oneDNN::dnnl when TRUE, and
# RNNX_ONEDNN_SUMMARY (one line for the configure summary).
include(${CMAKE_CURRENT_LIST_DIR}/TriState.cmake)
rnnx_tristate_option(RNNX_WITH_ONEDNN "Use oneDNN's sgemm for the cpu backend's float32 GEMMs")

set(RNNX_HAVE_ONEDNN FALSE)
if(RNNX_WITH_ONEDNN STREQUAL "OFF")
  set(RNNX_ONEDNN_SUMMARY "off (RNNX_WITH_ONEDNN=OFF)")
else()
  find_package(oneDNN QUIET)  # cmake/FindoneDNN.cmake says why not oneDNN's own config
  if(oneDNN_FOUND)
    set(RNNX_HAVE_ONEDNN TRUE)
    set(RNNX_ONEDNN_SUMMARY "${oneDNN_VERSION} (${oneDNN_LIBRARY})")
  elseif(RNNX_WITH_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "RNNX_WITH_ONEDNN=ON: oneDNN not found (Debian: apt-get install "
                        "libdnnl-dev; oneDNN_ROOT or CMAKE_PREFIX_PATH name another prefix)")
  else()
    set(RNNX_ONEDNN_SUMMARY "not found (RNNX_WITH_ONEDNN=AUTO; Debian: libdnnl-dev)")
  endif()
endif()
