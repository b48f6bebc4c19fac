# SPDX-License-Identifier: Apache-2.0
# PYTSTATES_PORTABLE=ON (scripts/portable, in a Debian 11 root): everything but glibc linked in, so
# that the binary runs on any Linux with glibc >= the build's. In place of the pkg-config targets
# of the distro build, the same names are defined over static archives:
#   PkgConfig::LIBDW    libdw.a + libelf.a (elfutils >= 0.188: dwfl_frame_reg), with what they need
#   PkgConfig::CODECS   libzstd.a liblz4.a liblzma.a       PkgConfig::ZLIB   libz.a
# libstdc++ and libgcc are linked statically. libdebuginfod and capstone stay opened by SONAME when
# first needed (symbols/libraries/): libdebuginfod from the system when it has one, capstone from
# lib/pytstates/ beside the binary (scripts/portable puts it there; the binary's run path is
# $ORIGIN/../lib/pytstates), else from the system.
#
# PYTSTATES_PORTABLE_DEPS: a ;-list of roots holding unpacked Debian -dev packages (usr/include,
# usr/lib/<multiarch>), searched before the system: elfutils 0.188 and the header-only libraries
# from Debian 12, pybind11 from unstable.

set(PYTSTATES_PORTABLE_DEPS "" CACHE STRING "Roots of unpacked -dev packages searched first (;-list)")
set(portable_include_dirs "")
set(portable_library_dirs "")
foreach(root IN LISTS PYTSTATES_PORTABLE_DEPS)
  list(APPEND portable_include_dirs ${root}/usr/include)
  list(APPEND portable_library_dirs ${root}/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} ${root}/usr/lib)
  list(APPEND CMAKE_PREFIX_PATH ${root}/usr)
endforeach()

# Looked up again at every configure: a cached path can name a file a new root no longer has.
foreach(var PORTABLE_LIBDW_INCLUDE PORTABLE_LIBELF_INCLUDE PORTABLE_DEBUGINFOD_INCLUDE PORTABLE_CAPSTONE_INCLUDE
            PORTABLE_LIBDW PORTABLE_LIBELF PORTABLE_LIBZ PORTABLE_LIBLZMA PORTABLE_LIBBZ2 PORTABLE_LIBZSTD
            PORTABLE_LIBLZ4 PORTABLE_CAPSTONE_SO)
  unset(${var} CACHE)
endforeach()

function(portable_static var name)
  find_library(${var} NAMES lib${name}.a HINTS ${portable_library_dirs} NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH)
  if(NOT ${var})
    message(FATAL_ERROR "PYTSTATES_PORTABLE: no static lib${name}.a (its Debian -dev package, or PYTSTATES_PORTABLE_DEPS)")
  endif()
endfunction()

find_path(PORTABLE_LIBDW_INCLUDE elfutils/libdw.h HINTS ${portable_include_dirs} NO_CMAKE_PATH)
find_path(PORTABLE_LIBELF_INCLUDE libelf.h HINTS ${portable_include_dirs} NO_CMAKE_PATH)
find_path(PORTABLE_DEBUGINFOD_INCLUDE elfutils/debuginfod.h HINTS ${portable_include_dirs} NO_CMAKE_PATH)
find_path(PORTABLE_CAPSTONE_INCLUDE capstone/capstone.h HINTS ${portable_include_dirs} NO_CMAKE_PATH)
foreach(header LIBDW LIBELF DEBUGINFOD CAPSTONE)
  if(NOT PORTABLE_${header}_INCLUDE)
    message(FATAL_ERROR "PYTSTATES_PORTABLE: no ${header} header (its Debian -dev package, or PYTSTATES_PORTABLE_DEPS)")
  endif()
endforeach()
# dwfl_frame_reg (elfutils 0.188) is what the native unwinder reads registers with.
file(STRINGS ${PORTABLE_LIBDW_INCLUDE}/elfutils/libdwfl.h has_frame_reg REGEX "dwfl_frame_reg")
if(NOT has_frame_reg)
  message(FATAL_ERROR "PYTSTATES_PORTABLE: ${PORTABLE_LIBDW_INCLUDE}/elfutils/libdwfl.h has no dwfl_frame_reg (elfutils >= 0.188 needed)")
endif()

portable_static(PORTABLE_LIBDW dw)
portable_static(PORTABLE_LIBELF elf)
portable_static(PORTABLE_LIBZ z)
portable_static(PORTABLE_LIBLZMA lzma)
portable_static(PORTABLE_LIBBZ2 bz2)
portable_static(PORTABLE_LIBZSTD zstd)
portable_static(PORTABLE_LIBLZ4 lz4)

add_library(PkgConfig::ZLIB INTERFACE IMPORTED)
set_target_properties(PkgConfig::ZLIB PROPERTIES INTERFACE_LINK_LIBRARIES ${PORTABLE_LIBZ})
add_library(PkgConfig::CODECS INTERFACE IMPORTED)
set_target_properties(PkgConfig::CODECS PROPERTIES
  INTERFACE_LINK_LIBRARIES "${PORTABLE_LIBZSTD};${PORTABLE_LIBLZ4};${PORTABLE_LIBLZMA}")
add_library(PkgConfig::LIBDW INTERFACE IMPORTED)
# libdw.a's own needs after it: libelf, the decompressors it reads compressed sections and files
# with, dlopen (its debuginfod hook) and threads.
set_target_properties(PkgConfig::LIBDW PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${PORTABLE_LIBDW_INCLUDE};${PORTABLE_LIBELF_INCLUDE}"
  INTERFACE_LINK_LIBRARIES "${PORTABLE_LIBDW};${PORTABLE_LIBELF};${PORTABLE_LIBZSTD};${PORTABLE_LIBLZMA};${PORTABLE_LIBBZ2};${PORTABLE_LIBZ};${CMAKE_DL_LIBS};Threads::Threads")
set(DEBUGINFOD_INCLUDE_DIRS ${PORTABLE_DEBUGINFOD_INCLUDE})
set(CAPSTONE_INCLUDE_DIRS ${PORTABLE_CAPSTONE_INCLUDE})

# The SONAMEs opened at run time: the ones every distribution ships these libraries under.
set(PYTSTATES_DEBUGINFOD_LIBRARY_SONAME libdebuginfod.so.1)
find_library(PORTABLE_CAPSTONE_SO NAMES capstone)
if(PORTABLE_CAPSTONE_SO)
  library_soname(PYTSTATES_CAPSTONE_LIBRARY ${PORTABLE_CAPSTONE_SO})
else()
  set(PYTSTATES_CAPSTONE_LIBRARY_SONAME libcapstone.so.4)
endif()

add_link_options(-static-libstdc++ -static-libgcc)
# The static archives' symbols stay inside whatever links them (the engine's shared library
# exports its C ABI only).
add_link_options(LINKER:--exclude-libs,ALL)
# bin/ -> lib/pytstates/ for the binary; $ORIGIN for the engine's lib/pytstates/libpytstates.so.0,
# whose own run path is the one its dlopen of capstone searches.
set(CMAKE_INSTALL_RPATH "\$ORIGIN/../lib/pytstates;\$ORIGIN")
