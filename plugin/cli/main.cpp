// SPDX-License-Identifier: Apache-2.0
// bin/pytstates: the command line lives in libpytstates.so.0 (plugin/engine/cli_main.cpp).
#include "plugin/engine/pytstates.h"

int main(int argc, char** argv) { return pytstates_main(argc, argv); }
