# SPDX-License-Identifier: Apache-2.0
"""A thread that spends much of its time in the vDSO: time.monotonic() is clock_gettime, which the
kernel's vDSO answers without a system call. Prints FACTS and READY, then loops until killed."""
import json
import os
import sys
import threading
import time

print("FACTS " + json.dumps({"pid": os.getpid(), "lwp": threading.get_native_id()}))
print("READY")
sys.stdout.flush()
while True:
    time.monotonic()
