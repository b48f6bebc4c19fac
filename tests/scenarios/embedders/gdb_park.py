# SPDX-License-Identifier: Apache-2.0
"""Run by gdb's own Python (gdb -batch -x gdb_park.py): records gdb's thread and interpreter
(truth.py, in $PYTSTATES_EMBEDDERS_DIR) and parks in park_in_gdb until the test releases it."""
import os
import sys

DIR = os.environ["PYTSTATES_EMBEDDERS_DIR"]
sys.path.insert(0, DIR)
import truth  # noqa: E402


def park_in_gdb():
    truth.record(os.path.join(DIR, "state"), "park_in_gdb")
    truth.wait_for_release(os.path.join(DIR, "state"))


park_in_gdb()
