# SPDX-License-Identifier: Apache-2.0
# library_soname(PREFIX FILE): PREFIX_SONAME, the name dlopen must be given for the shared library
# FILE (the development symlink pkg-config finds), read from its dynamic section; PREFIX_FILE, the
# file of that name beside it (for the package's dependencies).
function(library_soname prefix file)
  find_program(PYTSTATES_READELF NAMES ${CMAKE_READELF} readelf REQUIRED)
  execute_process(COMMAND ${PYTSTATES_READELF} -d ${file} OUTPUT_VARIABLE dynamic RESULT_VARIABLE status)
  string(REGEX MATCH "\\(SONAME\\)[^\n]*\\[([^]\n]+)\\]" found "${dynamic}")
  if(NOT status EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "${file}: no SONAME in its dynamic section")
  endif()
  get_filename_component(dir ${file} DIRECTORY)
  set(${prefix}_SONAME ${CMAKE_MATCH_1} PARENT_SCOPE)
  set(${prefix}_FILE ${dir}/${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()
