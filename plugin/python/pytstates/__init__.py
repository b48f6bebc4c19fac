# SPDX-License-Identifier: Apache-2.0
"""pytstates inside gdb: `python import pytstates.gdb` registers py-tstates, pybind-internals and
py-tstates-check."""
