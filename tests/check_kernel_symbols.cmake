# Fails when a per-ISA object (src/cpu/kernels/*.cpp: step kernels, packed and plain GEMM)
# defines an external symbol other than its table: such a symbol (an inline function or a
# template instance also emitted elsewhere) could be picked by the linker for a caller built for
# another ISA and run AVX-512 code on a machine without it. Run by ctest: cmake -DNM=... -DOBJECTS=a|b|c -P.
string(REPLACE "|" ";" objects "${OBJECTS}")
set(checked 0)
foreach(obj IN LISTS objects)
  if(NOT obj MATCHES "/kernels/[a-z0-9_]+\\.cpp\\.o$")
    continue()
  endif()
  execute_process(COMMAND ${NM} --defined-only --extern-only --demangle ${obj}
    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${obj}")
  endif()
  # Sanitizer builds add their own module bookkeeping symbols, and ASan's use-after-scope
  # cleanups give the kernels exception landing pads, whose tables reference the C++
  # personality routine through DW.ref.__gxx_personality_v0: data, the same in every object,
  # no code of any ISA.
  string(REGEX REPLACE "[^\n]*(kStepKernelsF(32|64)|kPackedKernels|kPlainGemmKernels|__asan|__odr_asan|__ubsan|DW\\.ref\\.__gxx_personality_v0)[^\n]*\n" "" rest "${out}")
  if(NOT rest STREQUAL "")
    message(FATAL_ERROR "${obj} defines more than its table:\n${rest}")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no kernel objects among ${OBJECTS}")
endif()
message(STATUS "${checked} kernel objects define only their tables")
