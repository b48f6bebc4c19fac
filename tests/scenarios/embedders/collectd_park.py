# SPDX-License-Identifier: Apache-2.0
"""collectd's python plugin imports this module (Import "collectd_park"): five read callbacks,
each run by one of collectd's read threads (ReadThreads 5). Four park in park_in_readN
(truth.wait_for_release, the GIL released), one keeps its thread busy in spin_in_read5
(truth.spin). Each records itself first; once the test creates state/stop they return at once."""
import os
import sys

import collectd

DIR = os.path.dirname(os.path.abspath(__file__))
STATE = os.path.join(DIR, "state")
sys.path.insert(0, DIR)
import truth  # noqa: E402


def stopped():
    return os.path.exists(os.path.join(STATE, "stop"))


def park_in_read1():
    truth.record(STATE, "park_in_read1")
    truth.wait_for_release(STATE)


def park_in_read2():
    truth.record(STATE, "park_in_read2")
    truth.wait_for_release(STATE)


def park_in_read3():
    truth.record(STATE, "park_in_read3")
    truth.wait_for_release(STATE)


def park_in_read4():
    truth.record(STATE, "park_in_read4")
    truth.wait_for_release(STATE)


def spin_in_read5():
    truth.record(STATE, "spin_in_read5")
    truth.spin(STATE)


def reader(function):
    def read(data=None):
        if not stopped():
            function()
    return read


for f in (park_in_read1, park_in_read2, park_in_read3, park_in_read4, spin_in_read5):
    collectd.register_read(reader(f), name=f.__name__)
