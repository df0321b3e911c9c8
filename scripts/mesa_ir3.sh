#!/usr/bin/env bash
# mesa_ir3.sh [BUILD_DIR]: builds the Mesa static libraries the Adreno code generator links (NIR,
# ir3, isaspec with ir3's encoder and decoder, freedreno common, util, compiler) from Debian's own
# `mesa` source package at a pinned version, once, into BUILD_DIR/mesa (default build/mesa). A
# second run finds the stamp and does nothing. Only the compiler links these; the runtime never.
#
# CAPGRAPH_MESA_VALIDATE=1 builds the validating variant (the sanitizer job's): Mesa's asserts on
# and nir_validate_shader compiled in (-Db_ndebug=false; still buildtype=release, so MESA_DEBUG=0
# and the struct layouts that depend on it stay those of the release variant). NIR validation runs
# after our emitter and after every NIR pass; a malformed shader aborts with NIR's own report.
# The release variant has neither: ir3 then compiles malformed NIR silently, or crashes on it.
#
# Why Mesa: no Debian package ships ir3 for amd64 (freedreno is built for arm only, and no
# package exports ir3 symbols or ships its tools); see ../shared/research/adreno_plan.md §1a.
#
# Apt is used with a source list, list directory and cache private to this build, so the machine's
# apt configuration is never changed. Meson >= 1.1 is needed by Mesa 25.0 (bookworm has 1.0.1):
# the bookworm-backports `meson` package is downloaded the same way and unpacked under
# BUILD_DIR/mesa/meson, not installed. Debian packages needed to run the build (python3-mako,
# python3-yaml, python3-packaging, flex, bison, pkg-config, zlib1g-dev) are installed when
# missing, as setup.sh does for its own.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "${1:-$repo/build}")
# The pinned version: Debian bookworm-backports' mesa (close to tinygrad's 25.2.7; same ir3 API
# but for a few renames). The hash is the orig tarball's, as listed in that suite's Sources index.
version=25.0.7
debian_version=25.0.7-2~bpo12+1
orig_sha256=592272df3cf01e85e7db300c449df5061092574d099da275d19e97ef0510f8a6
meson_version=1.7.0-1~bpo12+1
# The Debian mirror this machine's apt already uses (its first "debian" URI), so the private list
# reaches the same place; CAPGRAPH_DEBIAN_MIRROR overrides it.
debian_mirror() {
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    sed -nE 's/^deb(-src)?[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+\/debian)\/?[[:space:]].*/\3/p; s/^URIs:[[:space:]]+([^[:space:]]+\/debian)\/?$/\1/p' |
    head -n1 || true
}
mirror=${CAPGRAPH_DEBIAN_MIRROR:-$(debian_mirror)}
if [[ -z $mirror ]]; then
  echo "mesa_ir3: error: no Debian mirror in /etc/apt/sources.list*; set CAPGRAPH_DEBIAN_MIRROR" >&2
  exit 1
fi

validate=${CAPGRAPH_MESA_VALIDATE:-0}
case $validate in
  0) ndebug=true variant=release ;;
  1) ndebug=false variant=validating ;;
  *) echo "mesa_ir3: error: CAPGRAPH_MESA_VALIDATE must be 0 or 1, not '$validate'" >&2; exit 1 ;;
esac

root=$build/mesa
stamp=$root/ir3-$version.done
# (A build without the variant file predates the variants: release.)
if [[ -f $stamp ]] && [[ $(cat "$root/variant" 2>/dev/null || echo release) == "$variant" ]]; then
  echo "mesa_ir3: Mesa $version libraries ($variant) already built in $root"
  exit 0
fi
rm -f "$stamp"
started=$(date +%s)

packages=(python3-mako python3-yaml python3-packaging flex bison pkg-config zlib1g-dev ninja-build xz-utils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "mesa_ir3: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "mesa_ir3: error: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Private apt: the lists and the cache live under $root/apt; signatures are checked against the
# machine's Debian keyring as usual.
apt_dir=$root/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$root/download"
cat >"$apt_dir/sources.list" <<EOF
deb-src $mirror bookworm-backports main
deb $mirror bookworm-backports main
EOF
apt_private=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/none"
             -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1
             -o APT::Sandbox::User=root)
echo "mesa_ir3: fetching mesa $debian_version and meson $meson_version with a private apt list"
apt-get -qq "${apt_private[@]}" update
tarball=$root/download/mesa_$version.orig.tar.xz
# Another build of this tree (the release one, for the validating variant) may have the tarball.
if [[ ! -f $tarball && -f $repo/build/mesa/download/${tarball##*/} ]]; then
  cp "$repo/build/mesa/download/${tarball##*/}" "$tarball"
fi
if [[ ! -f $tarball ]] || ! echo "$orig_sha256  $tarball" | sha256sum -c --status; then
  # Only the orig tarball is used (Debian's patches touch packaging and other drivers, not ir3).
  # apt checks each file against the signed Sources index as it downloads; some mirrors lack the
  # .dsc of this backport, so a failure is judged by the tarball's hash below, not apt's status.
  (cd "$root/download" && apt-get -qq "${apt_private[@]}" source -d "mesa=$debian_version" >apt-source.log 2>&1) || true
  if ! echo "$orig_sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
    cat "$root/download/apt-source.log" >&2 || true
    echo "mesa_ir3: error: could not download mesa_$version.orig.tar.xz with sha256 $orig_sha256" >&2
    exit 1
  fi
fi
(cd "$root/download" && apt-get -qq "${apt_private[@]}" download "meson=$meson_version")
rm -rf "$root/meson" && dpkg-deb -x "$root/download/meson_${meson_version}_all.deb" "$root/meson"

src=$root/mesa-$version
rm -rf "$src" "$root/build"
echo "mesa_ir3: unpacking"
tar -C "$root" -xJf "$tarball"

# Meson must run under Debian's python3 (which has mako), not a user's pyenv or venv.
export PATH=/usr/bin:$PATH PYTHONPATH=$root/meson/usr/lib/python3/dist-packages
meson=("/usr/bin/python3" "$root/meson/usr/bin/meson")
cc=gcc; cxx=g++
if command -v ccache >/dev/null; then cc="ccache gcc"; cxx="ccache g++"; fi
# The smallest configuration that descends into src/freedreno: no drivers, no window systems, no
# LLVM; `-Dtools=freedreno` is what makes meson read src/freedreno when no driver is enabled.
# Static, position-independent archives; no downloads (every dependency comes from Debian).
echo "mesa_ir3: configuring ($variant)"
CC=$cc CXX=$cxx "${meson[@]}" setup "$root/build" "$src" --wrap-mode=nodownload -Dbuildtype=release \
  -Ddefault_library=static -Db_staticpic=true -Db_ndebug=$ndebug \
  -Dplatforms= -Dgallium-drivers= -Dvulkan-drivers= -Dtools=freedreno \
  -Dllvm=disabled -Dglx=disabled -Degl=disabled -Dgbm=disabled -Dopengl=false \
  -Dgles1=disabled -Dgles2=disabled -Dzstd=disabled -Dvalgrind=disabled \
  -Dlibunwind=disabled -Dxmlconfig=disabled -Dexpat=disabled >"$root/configure.log" 2>&1 ||
  { tail -30 "$root/configure.log" >&2; echo "mesa_ir3: error: meson setup failed; log in $root/configure.log" >&2; exit 1; }

# Libraries are build_by_default: false; name them (link order: users before what they use).
libs=(src/freedreno/ir3/libfreedreno_ir3.a src/freedreno/isa/libir3encode.a src/freedreno/isa/libir3decode.a
      src/compiler/isaspec/libisaspec.a src/freedreno/common/libfreedreno_common.a src/compiler/nir/libnir.a
      src/compiler/libcompiler.a src/util/libmesa_util.a src/util/libmesa_util_sse41.a
      src/util/blake3/libblake3.a src/c11/impl/libmesa_util_c11.a)
echo "mesa_ir3: building ${#libs[@]} libraries ($(nproc) jobs; log in $root/build.log)"
ninja -C "$root/build" -j "$(nproc)" "${libs[@]}" >"$root/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$root/build.log" | head -20 >&2; echo "mesa_ir3: error: the Mesa build failed; log in $root/build.log" >&2; exit 1; }
# What CMake needs to compile against these libraries exactly as Mesa compiled them: the -D and -I
# flags of an ir3 source (struct layouts in Mesa's headers depend on some of the definitions),
# and the archives in link order.
/usr/bin/python3 - "$root" "${libs[@]}" <<'PY'
import json, os, shlex, sys
root, libs = sys.argv[1], sys.argv[2:]
build = os.path.join(root, "build")
entry = next(e for e in json.load(open(os.path.join(build, "compile_commands.json")))
             if e["file"].endswith("freedreno/ir3/ir3_compiler_nir.c"))
args = shlex.split(entry["command"])
defs, incs = [], []
for i, a in enumerate(args):
    if a == "-D": defs.append(args[i + 1])
    elif a.startswith("-D"): defs.append(a[2:])
    elif a == "-I": incs.append(os.path.normpath(os.path.join(entry["directory"], args[i + 1])))
    elif a.startswith("-I"): incs.append(os.path.normpath(os.path.join(entry["directory"], a[2:])))
defs = [d for d in defs if '"' not in d]  # PACKAGE_VERSION and the like: strings no header needs
q = lambda v: '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
with open(os.path.join(root, "mesa_ir3.cmake"), "w") as f:
    f.write("# Generated by scripts/mesa_ir3.sh, do not edit.\n")
    f.write("set(MESA_IR3_DEFINITIONS " + " ".join(q(d) for d in defs) + ")\n")
    f.write("set(MESA_IR3_INCLUDES " + " ".join(q(d) for d in incs) + ")\n")
    # Whether nir_validate_shader and Mesa's asserts are compiled in (no NDEBUG): the code that
    # includes Mesa's headers must then be compiled without NDEBUG too, or nir.h makes
    # nir_validate_shader an empty inline.
    f.write("set(MESA_IR3_VALIDATES " + ("OFF" if "NDEBUG" in defs else "ON") + ")\n")
    f.write("set(MESA_IR3_LIBRARIES " + " ".join(q(os.path.join(build, l)) for l in libs) + ")\n")
PY
echo "$variant" >"$root/variant"
echo "$debian_version" >"$stamp"
echo "mesa_ir3: Mesa $version ($variant) built in $(( $(date +%s) - started )) s into $root"
