#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sources of the pytstates library and CLI whose code depends on the architecture compiled for
# aarch64 (-fsyntax-only, warnings as errors) with Debian's cross compiler: the live target's
# aarch64 path (PTRACE_GETREGSET, NT_ARM_TLS) builds, though it runs on no arm64 hardware here.
# Those are the files that test __aarch64__/__x86_64__, name aarch64, or include the kernel's and
# the C library's architecture-specific headers; every other file is the same code on both, built
# whole for aarch64 by scripts/portable --arch arm64 (CI; its archive is run under qemu by
# portable.aarch64). All 117 files took 4 minutes of CI's 2 cores; these take seconds. The headers that are not the C
# library's (elfutils, nlohmann-json, CLI11) are architecture-independent: taken from /usr/include.
# Usage: cross_compile.sh GENERATED_INCLUDE_DIR   (the build's generated headers: commands/version.h)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
generated=${1:?usage: cross_compile.sh GENERATED_INCLUDE_DIR}
cxx=aarch64-linux-gnu-g++
command -v $cxx >/dev/null || { echo "FAIL: $cxx is not installed (g++-aarch64-linux-gnu)"; exit 1; }
cd "$top"
files=$(grep -lE '__aarch64__|__x86_64__|aarch64|<sys/user\.h>|<sys/ptrace\.h>|<asm/|<sys/procfs\.h>|<sys/ucontext\.h>|<elf\.h>' \
  symbols/*.cpp symbols/*/*.cpp commands/*.cpp commands/*/*.cpp plugin/cli/*.cpp)
[ -n "$files" ] || { echo "FAIL: no architecture-dependent source found (the grep is out of date)"; exit 1; }
printf '%s\n' $files | xargs -P "$(nproc)" -I{} $cxx -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I. -I"$generated" -idirafter /usr/include {}
echo "PASS: $(echo "$files" | wc -w) architecture-dependent files compile for aarch64"
