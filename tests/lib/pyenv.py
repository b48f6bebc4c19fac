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


def _release(name):
    """A version directory's name as numbers, for "newest" (3.12.10 after 3.12.9)."""
    return [int(part) if part.isdigit() else -1 for part in name.split(".")]


def python(version):
    """The newest pyenv CPython X.Y's interpreter (full version, path), or None."""
    base = root()
    if base is None:
        return None
    for name in sorted(os.listdir(os.path.join(base, "versions")), key=_release, reverse=True):
        exe = os.path.join(base, "versions", name, "bin", "python" + version)
        if name.startswith(version + ".") and os.path.exists(exe):
            return name, exe
    return None


def prefix(version):
    """The prefix of pyenv's CPython of one release (3.12.1: ROOT/versions/3.12.1), or None."""
    base = root()
    path = os.path.join(base, "versions", version) if base else None
    return path if path and os.path.isdir(path) else None


def missing(version):
    """Why pyenv's CPython `version` (X.Y or X.Y.Z) is not here, in words."""
    base = root()
    if base is None:
        env = os.environ.get("PYENV_ROOT")
        return "pyenv's CPython %s is not installed here (no pyenv: %s)" % (
            version, "$PYENV_ROOT %s has no versions/" % env if env else "neither `pyenv root` nor ~/.pyenv has versions/")
    return "pyenv's CPython %s is not installed here (not in %s)" % (version, os.path.join(base, "versions"))


def not_run(reason):
    """What the test needs is not on this machine: one NOT RUN line saying what, and exit 77."""
    print("NOT RUN: " + reason, flush=True)
    sys.exit(NOT_RUN)


def require(version):
    """python(version), or a NOT RUN line and exit 77."""
    found = python(version)
    if found is None:
        not_run(missing(version))
    return found


def require_prefix(version):
    """prefix(version) of one release (3.12.1), or a NOT RUN line and exit 77. A prefix that is
    there but lacks a file the test needs is a failure of the test, not this."""
    found = prefix(version)
    if found is None:
        not_run(missing(version))
    return found
