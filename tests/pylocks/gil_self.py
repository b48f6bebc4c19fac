# SPDX-License-Identifier: Apache-2.0
"""A thread that takes the GIL again while it holds it, with another thread state: through
ctypes.pythonapi (a PyDLL: the GIL stays held across the call) it makes a second thread state and
hands it to PyEval_RestoreThread, whose take_gil waits for the GIL this thread holds. Prints FACTS
(its native id, the thread state holding the GIL, the second one) and READY, then waits for good."""
import ctypes, json, os, sys, threading
api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api.PyThreadState_New.restype = ctypes.c_void_p
api.PyThreadState_New.argtypes = [ctypes.c_void_p]
api.PyEval_RestoreThread.argtypes = [ctypes.c_void_p]
api.PyThreadState_Get.restype = ctypes.c_void_p
held = api.PyThreadState_Get()
second = api.PyThreadState_New(api.PyInterpreterState_Get())
print("FACTS " + json.dumps({"pid": os.getpid(), "lwp": threading.get_native_id(), "held": hex(held), "second": hex(second)}))
print("READY", flush=True)
api.PyEval_RestoreThread(second)  # the GIL is ours already (PyDLL keeps it): waits for itself
