# SPDX-License-Identifier: Apache-2.0
"""Run by vim's :py3file (vim -es): records vim's thread and interpreter (truth.py, in
$PYTSTATES_EMBEDDERS_DIR) and parks in park_in_vim until the test releases it."""
import os
import sys

DIR = os.environ["PYTSTATES_EMBEDDERS_DIR"]
sys.path.insert(0, DIR)
import truth  # noqa: E402


def park_in_vim():
    truth.record(os.path.join(DIR, "state"), "park_in_vim")
    truth.wait_for_release(os.path.join(DIR, "state"))


park_in_vim()
