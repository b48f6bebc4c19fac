# SPDX-License-Identifier: Apache-2.0
# The toolchain file of scripts/portable --arch arm64: aarch64 Linux, cross-built in its Debian 11
# root with bullseye's gcc-10/g++-10 cross compilers (g++-10-aarch64-linux-gnu), whose glibc 2.31
# (libc6-dev-arm64-cross, /usr/aarch64-linux-gnu) is the one the binary is linked against. The
# arm64 static archives and headers come from PYTSTATES_PORTABLE_DEPS (cmake/Portable.cmake), the
# dpkg -x'd sysroot among them.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc-10)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++-10)
# What the compiler's own directories (/usr/lib/gcc-cross/..., /usr/aarch64-linux-gnu/lib) do not
# tell CMake: the multiarch directory name find_library looks under (usr/lib/aarch64-linux-gnu)
# and the modules' suffix (.cpython-3XY-aarch64-linux-gnu.so) is made of.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The cross compilers' own tree first; the root's (x86_64) libraries are never searched, since
# the multiarch name above keeps find_library out of /usr/lib/x86_64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
