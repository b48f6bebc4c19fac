#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source of the pytstates library and CLI compiled for aarch64 (-fsyntax-only, warnings as
# errors) with Debian's cross compiler: the live target's aarch64 path (PTRACE_GETREGSET,
# NT_ARM_TLS) builds, though it runs on no arm64 hardware here. The headers that are not the C
# library's (elfutils, nlohmann-json, CLI11) are architecture-independent: taken from /usr/include.
# Usage: cross_compile.sh GENERATED_INCLUDE_DIR   (the build's generated headers: commands/version.h)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
generated=${1:?usage: cross_compile.sh GENERATED_INCLUDE_DIR}
cxx=aarch64-linux-gnu-g++
command -v $cxx >/dev/null || { echo "FAIL: $cxx is not installed (g++-aarch64-linux-gnu)"; exit 1; }
cd "$top"
files=$(ls symbols/*.cpp symbols/*/*.cpp commands/*.cpp commands/*/*.cpp plugin/cli/*.cpp)
printf '%s\n' $files | xargs -P "$(nproc)" -I{} $cxx -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I. -I"$generated" -idirafter /usr/include {}
echo "PASS: $(echo "$files" | wc -w) files compile for aarch64"
