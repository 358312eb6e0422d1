# Runs a GoogleTest executable with a --gtest_filter, after checking that every positive
# pattern of the filter selects at least one test: a pattern that matches nothing (a typo,
# a renamed suite) would otherwise pass silently while testing nothing.
#   cmake -DEXE=<test binary> -DFILTER=<a:b:c[-neg]> [-DEMULATOR=<cmd|arg|...>] -P run_filtered.cmake
# EMULATOR (a cross build's CMAKE_CROSSCOMPILING_EMULATOR, its words separated by |) runs
# the binary: qemu-aarch64|-L|/usr/aarch64-linux-gnu. CHECK_ONLY=1 checks the patterns and
# runs nothing (scripts/test-aarch64.sh then runs the filter in shards).
if(NOT EXE OR NOT FILTER)
  message(FATAL_ERROR "run_filtered.cmake: give -DEXE=... and -DFILTER=...")
endif()
string(REPLACE "|" ";" emulator "${EMULATOR}")
string(FIND "${FILTER}" "-" negative_at)
if(negative_at EQUAL -1)
  set(positive "${FILTER}")
else()
  string(SUBSTRING "${FILTER}" 0 ${negative_at} positive)
endif()
string(REPLACE ":" ";" patterns "${positive}")
foreach(pattern IN LISTS patterns)
  execute_process(COMMAND ${emulator} ${EXE} --gtest_list_tests --gtest_filter=${pattern}
                  OUTPUT_VARIABLE listing RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "run_filtered.cmake: ${EXE} --gtest_list_tests failed (${status})")
  endif()
  # Test names are the indented lines of the listing; suites are not indented.
  string(REGEX MATCHALL "\n  [^ \n]+" names "\n${listing}")
  list(LENGTH names count)
  if(count EQUAL 0)
    message(FATAL_ERROR "run_filtered.cmake: filter pattern '${pattern}' selects no test")
  endif()
  message(STATUS "filter pattern '${pattern}' selects ${count} tests")
endforeach()
if(CHECK_ONLY)
  return()
endif()
execute_process(COMMAND ${emulator} ${EXE} --gtest_filter=${FILTER} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "run_filtered.cmake: ${EXE} failed (${status})")
endif()
