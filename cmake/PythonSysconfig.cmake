# SPDX-License-Identifier: Apache-2.0
# python_sysconfig(PYTHON INCLUDE_VAR LIBRARY_VAR SUFFIX_VAR): what another CPython (pyenv's, a
# free-threaded build) says of itself, for scenario programs built against it: its include
# directory, its libpython's path, and its extension-module suffix.
function(python_sysconfig python include_var library_var suffix_var)
  execute_process(COMMAND ${python} -c "import sysconfig as s; print(s.get_paths()['include']); print((s.get_config_var('LIBDIR') or '') + '/' + (s.get_config_var('LDLIBRARY') or '')); print(s.get_config_var('EXT_SUFFIX'))"
                  OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 include)
  list(GET out 1 library)
  list(GET out 2 suffix)
  set(${include_var} ${include} PARENT_SCOPE)
  set(${library_var} ${library} PARENT_SCOPE)
  set(${suffix_var} ${suffix} PARENT_SCOPE)
endfunction()
