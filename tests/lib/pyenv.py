# SPDX-License-Identifier: Apache-2.0
"""pyenv's CPythons, which the Debian 12 machines of this project have and the Debian 13 root has
not: a test that needs one and finds none says so and exits 77 (ctest's SKIP_RETURN_CODE: counted
as not run, never as passed)."""
import os
import subprocess
import sys

NOT_RUN = 77


def root():
    """pyenv's root directory, or None when pyenv is not installed."""
    path = os.environ.get("PYENV_ROOT")
    if not path:
        try:
            path = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  universal_newlines=True).stdout.strip()
        except OSError:  # no pyenv on PATH
            path = os.path.expanduser("~/.pyenv")
    return path if path and os.path.isdir(os.path.join(path, "versions")) else None


def python(version):
    """The newest pyenv CPython X.Y's interpreter (full version, path), or None."""
    base = root()
    if base is None:
        return None
    for name in sorted(os.listdir(os.path.join(base, "versions")), reverse=True):
        exe = os.path.join(base, "versions", name, "bin", "python" + version)
        if name.startswith(version + ".") and os.path.exists(exe):
            return name, exe
    return None


def require(version):
    """python(version), or a NOT RUN line and exit 77."""
    found = python(version)
    if found is None:
        print("NOT RUN: pyenv's CPython %s is not installed here" % version)
        sys.exit(NOT_RUN)
    return found
