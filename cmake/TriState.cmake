# rnnx_tristate_option(NAME DOC): a cache option that is AUTO (use the dependency when it is
# found), ON (require it: configuring fails without it) or OFF (never use it). CMake's
# boolean spellings (TRUE, 1, NO, ...) are read as ON and OFF; anything else fails here,
# naming the option and its value. NAME holds the normalised value afterwards.
function(rnnx_tristate_option name doc)
  set(${name} AUTO CACHE STRING "${doc} (AUTO, ON or OFF)")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" value)
  if(value STREQUAL "AUTO")
    set(value AUTO)
  elseif(value MATCHES "^(ON|YES|Y|TRUE|1)$")
    set(value ON)
  elseif(value MATCHES "^(OFF|NO|N|FALSE|0)$")
    set(value OFF)
  else()
    message(FATAL_ERROR "${name} (= \"${${name}}\") must be AUTO, ON or OFF")
  endif()
  set(${name} ${value} PARENT_SCOPE)
endfunction()
