# SPDX-License-Identifier: Apache-2.0
"""One WeeChat script, loaded three times (a.py, b.py, c.py in python/autoload, each in its own
sub-interpreter): script X hooks the command /pytstates_X. /pytstates_a ROUND records itself and
runs /pytstates_b ROUND, which records itself and runs /pytstates_c ROUND, all on WeeChat's main
thread, each nested in the one before. In the innermost, ROUND "spin" keeps script c busy in
spin_in_c holding the GIL (no system call: truth.spin_holding), "park" parks it in park_in_c
(truth.wait_for_release, the GIL released). /pytstates_a runs "spin", then "park"."""
import os
import sys

import weechat

NAME = os.path.splitext(os.path.basename(__file__))[0]  # a, b, c
DIR = os.environ["PYTSTATES_EMBEDDERS_DIR"]
STATE = os.path.join(DIR, "state")
sys.path.insert(0, DIR)
import truth  # noqa: E402

NEXT = {"a": "b", "b": "c"}
MAPS = {}


def spin_in_c(round_):
    truth.record_mapped(MAPS["fact"], "spin_in_c", round=round_, innermost="spin_holding")
    truth.spin_holding(MAPS["stop"])


def park_in_c(round_):
    truth.record(STATE, "park_in_c", round=round_)
    truth.wait_for_release(STATE)


def run_a(rounds):
    for round_ in rounds:
        truth.record(STATE, "run_a", round=round_)
        weechat.command("", "/pytstates_b " + round_)


def run_b(round_):
    truth.record(STATE, "run_b", round=round_)
    weechat.command("", "/pytstates_c " + round_)


def command_cb(data, buffer, args):
    if NAME == "a":
        run_a(args.split() or ["spin", "park"])
    elif NAME == "b":
        run_b(args.strip())
    else:
        (spin_in_c if args.strip() == "spin" else park_in_c)(args.strip())
    return weechat.WEECHAT_RC_OK


weechat.register("pytstates_" + NAME, "pytstates", "1.0", "Apache-2.0", "pytstates embedders test", "", "")
weechat.hook_command("pytstates_" + NAME, "pytstates embedders test", "", "", "", "command_cb", "")
truth.record(STATE, "loaded_" + NAME)
if NAME == "c":
    MAPS.update(fact=truth.open_mapped(STATE, "held.fact"), stop=truth.open_mapped(STATE, "stop.flag"))
