# SPDX-License-Identifier: Apache-2.0
# A private apt state for fetching Debian packages of other suites and architectures, sourced by
# the fetch scripts (scripts/debian-python, scripts/debian-root, ...). The system's apt lists,
# cache, status and locks are neither used nor written; nothing is installed.
#
#   debian_mirror                     the machine's own Debian mirror, read from its apt sources
#                                     (PYTSTATES_DEBIAN_MIRROR overrides it)
#   apt_private DIR "SUITE..." ARCH [src]
#                                     sets up DIR/{sources.list,lists,cache,status} and runs update;
#                                     with "src", deb-src lines too; fills the array apt_opts
#   apt_fetch DIR PKG...              downloads binary packages (PKG or PKG=VERSION) into DIR/debs
#   apt_source_newest DIR PKG OUTDIR  apt-get source of PKG, trying its listed versions newest first
#                                     (the archive's index can name files it no longer serves)
#   die MESSAGE                       one line on stderr, exit status 2
# The caller sets `me` (its own name, for messages).

keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() {
  echo "${me:-fetch}: $*" >&2
  exit 2
}

debian_mirror() {
  if [ -n "${PYTSTATES_DEBIAN_MIRROR:-}" ]; then
    echo "$PYTSTATES_DEBIAN_MIRROR"
    return
  fi
  local uri=""
  # deb822 sources: the first URI of a stanza whose suites are not the security ones
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk 'BEGIN{RS=""; FS="\n"} {u=""; s=""; for (i=1;i<=NF;i++) { if ($i ~ /^URIs:/) u=$i; if ($i ~ /^Suites:/) s=$i }
               sub(/^URIs:[ \t]*/, "", u); split(u, a, /[ \t]+/);
               if (a[1] != "" && s !~ /security/ && a[1] ~ /\/debian\/?$/) { print a[1]; exit } }' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -r "$f" ] || continue
      uri=$(awk '$1 == "deb" { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { if ($i ~ /\/debian\/?$/) { print $i; exit } break } }' "$f")
      [ -n "$uri" ] && break
    done
  fi
  [ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list* (set PYTSTATES_DEBIAN_MIRROR)"
  echo "${uri%/}"
}

apt_why() {  # the line of an apt log that says what went wrong
  { grep -E '^[EW]: Failed to fetch' "$1"; grep -E '^(E:|W:|Err:)' "$1"; } | head -1 | sed 's/^[EW]: //'
}

apt_private() {
  local dir=$1 suites=$2 arch=$3 src=${4:-}
  local mirror
  mirror=$(debian_mirror)
  [ -r "$keyring" ] || die "no Debian archive keyring at $keyring (package debian-archive-keyring)"
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs" || die "cannot create $dir"
  : > "$dir/sources.list"
  for suite in $suites; do
    echo "deb [signed-by=$keyring] $mirror $suite main" >> "$dir/sources.list"
    [ "$src" = src ] && echo "deb-src [signed-by=$keyring] $mirror $suite main" >> "$dir/sources.list"
  done
  : > "$dir/status"
  apt_opts=(-q
            -o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::Etc::Preferences=/dev/null" -o Dir::Etc::PreferencesParts=/dev/null
            -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
            -o "Dir::State::Status=$dir/status" -o Debug::NoLocking=1
            -o APT::Sandbox::User=root -o Acquire::Retries=3 -o Acquire::http::Timeout=30
            -o Acquire::Languages=none -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
            # A mirror's unstable Release file can be past its Valid-Until for weeks; the
            # signatures are still checked.
            -o Acquire::Check-Valid-Until=false)
  if ! apt-get "${apt_opts[@]}" update >"$dir/update.log" 2>&1 ||
     grep -qE '^(E:|W: Failed to fetch|Err:)' "$dir/update.log"; then
    die "Debian's $suites suite is unreachable at $mirror: $(apt_why "$dir/update.log") (log: $dir/update.log)"
  fi
}

apt_fetch() {
  local dir=$1
  shift
  rm -f "$dir"/debs/*.deb
  if ! (cd "$dir/debs" && apt-get "${apt_opts[@]}" download "$@") >"$dir/download.log" 2>&1; then
    die "could not download $*: $(apt_why "$dir/download.log") (log: $dir/download.log)"
  fi
}

apt_source_newest() {
  local dir=$1 pkg=$2 out=$3 version
  mkdir -p "$out"
  for version in $(apt-cache "${apt_opts[@]}" showsrc "$pkg" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -uVr); do
    if (cd "$out" && apt-get "${apt_opts[@]}" source --download-only "$pkg=$version") >"$dir/source.log" 2>&1; then
      echo "$version"
      return 0
    fi
    echo "${me:-fetch}: $pkg $version is listed but not served ($(apt_why "$dir/source.log")); trying an older one" >&2
  done
  die "no listed version of source package $pkg could be downloaded (log: $dir/source.log)"
}
