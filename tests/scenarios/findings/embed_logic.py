# SPDX-License-Identifier: Apache-2.0
"""Python run by embed_host's worker threads."""
import threading

release = threading.Event()


def wait_for_work(report):
    report()
    release.wait()  # waits with the GIL released


def hold_the_gil(report, block):
    report()
    block()  # a C++ function that blocks without releasing the GIL
