# SPDX-License-Identifier: Apache-2.0
"""Python run by seed_host's worker in crash-py mode: each file's work called from Python, as the
seed's service did (its on_recv_msg called torch). Two Python frames over the pybind11 call; the
tests find the calls' lines in this file by their text."""


def check(checker, file):
    return checker.work(file)  # the pybind11 function: releases and re-takes the GIL


def on_recv_msg(checker, file):
    pending = [file] * 2
    reply = check(checker, file)
    return reply + len(pending)
