# SPDX-License-Identifier: Apache-2.0
# What pytstates needs from Debian, by the names Debian 12 (bookworm) and Debian 13 (trixie) both
# have: the default-version packages (python3-dbg, lldb, clang...) follow each suite's defaults
# (3.11 / lldb-14 / clang-14 on 12; 3.13 / lldb-19 / clang-19 on 13). Sourced by scripts/setup
# and scripts/debian-root; the versions are read back from what is installed.
#
#   suite_packages            array: every package the build and the suite use
#   suite_demo_packages       array: the subset scripts/demo needs (the CLI and the seed's scenario)
#   suite_plpython_package    [SUITE]: the PL/Python package of the suite's default PostgreSQL
#   suite_modpython_package   [SUITE]: Apache mod_python's package, empty where the suite has none
#   suite_python_version      the suite's python3 as X.Y (3.11, 3.13)
#   suite_llvm_version        the major version of the installed lldb (14, 19), from /usr/bin/lldb
#   suite_missing PKG...      prints the packages of PKG... that are not installed

# PL/Python has only versioned package names: each suite's default PostgreSQL's.
suite_plpython_package() {  # [SUITE]: bookworm, trixie; this machine's by default
  local suite=${1:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
  case $suite in
    bookworm) echo postgresql-plpython3-15 ;;
    *) echo postgresql-plpython3-17 ;;
  esac
}

# mod_python is in Debian 12 (3.5.0+git20211031) but not in Debian 13 (trixie; only its backports):
# tests/embedders' mod_python case reports itself not run there.
suite_modpython_package() {  # [SUITE]: bookworm, trixie; this machine's by default
  local suite=${1:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
  case $suite in
    bookworm) echo libapache2-mod-python ;;
  esac
}

suite_demo_packages=(
  build-essential cmake pkg-config          # the toolchain
  libdw-dev libelf-dev                      # ELF and DWARF (libelf, libdw)
  nlohmann-json3-dev                        # --json output
  libzstd-dev liblz4-dev liblzma-dev        # compressed cores (systemd-coredump)
  zlib1g-dev                                # zlib-compressed debug sections, inflated for type lookups
  libdebuginfod-dev                         # files fetched by build-id (DEBUGINFOD_URLS)
  libcapstone-dev                           # py-tstates-record: the return instructions of CPython's thread-state creators
  libcli11-dev                              # command-line parsing
  pybind11-dev python3-dev libpython3-dev   # scenario programs that embed the suite's Python
  python3-dbg                               # DWARF for the suite's python3.X and libpython3.X
  gdb                                       # gcore, when the kernel's cores go to a pipe
  python3-torch                             # the demo's second scenario and the tests' real torch (libtorch_python.so's own pybind11)
)
suite_packages=(
  "${suite_demo_packages[@]}"
  elfutils                                  # eu-stack, eu-readelf in tests
  libgtest-dev googletest                   # unit tests
  clang libclang-rt-dev                     # libFuzzer (scripts/fuzz): the suite's default clang
  gdbserver                                 # the gdb commands against a remote target
  lldb liblldb-dev                          # the lldb plugin (SB API) of the suite's default lldb
  python3-greenlet python3-gevent           # the greenlet scenarios (stacks switched in and out of a tstate; gevent's Greenlet)
  libc6-dbg                                 # glibc's struct pthread in gdb, for tests that patch a key slot in a core
  zstd lz4 xz-utils                         # tests: cores compressed by the real tools
  libffi-dev                                # tests: the free-threaded CPython built by scripts/python-freethreaded (with zlib1g-dev)
  debuginfod iproute2 util-linux mount      # tests: a real debuginfod server, network and mount namespaces (mount(8))
  gdb-multiarch g++-aarch64-linux-gnu       # tests: arm64 cores (read by gdb-multiarch; programs cross-compiled)
  lintian man-db                            # tests: the .deb checked by Debian's lintian; man -l renders the page
  tmux                                      # tests: gdb.bt.terminal types a gdb session in a real terminal
  file dpkg-dev                             # scripts/package: dpkg-shlibdeps
  python3-jsonschema                        # tests: every --json report against docs/report.schema.json
  # tests/embedders: real programs that embed Python, started by the tests on 127.0.0.1
  uwsgi-core uwsgi-plugin-python3           # uWSGI, its apps mounted one per sub-interpreter
  apache2 libapache2-mod-wsgi-py3           # Apache mod_wsgi, daemon and embedded mode
  postgresql "$(suite_plpython_package)"    # PostgreSQL's plpython3u
  vim-nox                                   # vim's :py3
  $(suite_modpython_package)                # Apache mod_python (Debian 12): PythonInterpreter sub-interpreters, pooled thread states
  weechat-headless weechat-python           # WeeChat's scripts, one sub-interpreter each, callbacks nested on one thread
  collectd-core                             # collectd's python plugin: read callbacks on its ReadThreads
)

suite_python_version() {
  /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

suite_llvm_version() {
  local lldb
  lldb=$(readlink -f /usr/bin/lldb 2>/dev/null) || return 1
  [[ $lldb =~ /usr/lib/llvm-([0-9]+)/ ]] || return 1
  echo "${BASH_REMATCH[1]}"
}

suite_missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
