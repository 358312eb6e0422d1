"""Checks what a repaired rnnx wheel holds (scripts/build-wheel.sh runs it; docs/packaging.md):
the platform tag; no library bundled by the repair and no binary needing a library beyond
glibc's own (libc, libm, libpthread, libdl, librt, the loader) and librnnx; exactly one
librnnx file; the headers, the CMake package, the command and the licences; relative RPATHs
without empty entries; the console script and the cmake.prefix entry point. Prints a summary
of the contents (as `unzip -l`, by folder) and exits non-zero naming every failed check.

    check_wheel_contents.py WHEEL --plat manylinux_2_28_x86_64
    check_wheel_contents.py WHEEL --plat manylinux_2_34_x86_64 --cuda-plugin

--cuda-plugin checks the rnnx-cuda wheel instead (scripts/build-cuda-wheel.sh): tag
py3-none-PLAT, the package rnnx_cuda and its one library lib/librnnx_cuda.so, nothing bundled;
the library needs glibc, libgcc_s and libcudnn.so.9 only, finds cuDNN and cuBLAS through a
RUNPATH of exactly NVIDIA's wheels relative to itself, holds no absolute path of the building
machine, and exports the plugin's entry alone; the metadata requires the same rnnx version
and NVIDIA's cuDNN and cuBLAS wheels.
"""

import argparse
import collections
import io
import re
import stat
import sys
import zipfile

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

SYSTEM_LIBS = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|"
                         r"ld-linux-[-\w]+\.so\.\d)$")
EXPECTED_RPATH = {"rnnx/bin/rnnx": "$ORIGIN/../lib", "rnnx/_rnnx": "$ORIGIN/lib"}


def elf_dynamic(data):
    """(NEEDED list, RPATH/RUNPATH entries) of an ELF file's dynamic section."""
    elf = ELFFile(io.BytesIO(data))
    needed, paths = [], []
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                    paths += (tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath).split(":")
    return needed, paths


def exported_symbols(data):
    """The names an ELF file defines in its dynamic symbol table, global or weak."""
    elf = ELFFile(io.BytesIO(data))
    dynsym = elf.get_section_by_name(".dynsym")
    return sorted(sym.name for sym in dynsym.iter_symbols()
                  if sym.name and sym["st_shndx"] != "SHN_UNDEF"
                  and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK"))


def check_licences(z, package, problems):
    """The licences of package/licenses: README.txt names each file (a "name.txt:" line), and
    each file named is in the wheel. Returns the names listed."""
    names = z.namelist()
    readme = z.read(f"{package}/licenses/README.txt").decode()
    listed = re.findall(r"^(\S+\.txt):", readme, re.M)
    print("licences: " + ", ".join(listed))
    for f in listed:
        if f"{package}/licenses/{f}" not in names:
            problems.append(f"licence {f} listed in {package}/licenses/README.txt but missing")
    return listed


PLUGIN_NEEDED = re.compile(r"^(libcudnn\.so\.9|libgcc_s\.so\.1)$")
PLUGIN_RUNPATH = ["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN/../../nvidia/cu13/lib"]
PLUGIN_LIB = "rnnx_cuda/lib/librnnx_cuda.so"


def check_cuda_plugin(z, name, plat, problems):
    """The rnnx-cuda wheel's checks (see the module's text)."""
    if not re.search(rf"-py3-none-{re.escape(plat)}\.whl$", name):
        problems.append(f"the wheel's tag is not py3-none-{plat}: {name}")
    names = z.namelist()
    grafted = [n for n in names if re.match(r"^[^/]+\.libs/", n)]
    if grafted:
        problems.append(f"auditwheel bundled libraries (NVIDIA's wheels supply them): {grafted}")
    for want in ["rnnx_cuda/__init__.py", PLUGIN_LIB, "rnnx_cuda/licenses/README.txt"]:
        if want not in names:
            problems.append(f"missing {want}")
    if "rnnx_cuda/licenses/README.txt" in names:
        listed = check_licences(z, "rnnx_cuda", problems)
        for want in ["cuda_runtime.txt", "libstdcxx.txt"]:
            if want not in listed:
                problems.append(f"rnnx_cuda/licenses lacks {want}")
    elves = [n for n in names if z.read(n).startswith(b"\x7fELF")]
    if elves != [PLUGIN_LIB]:
        problems.append(f"want exactly one binary, {PLUGIN_LIB}; got {elves}")
    if PLUGIN_LIB in names:
        data = z.read(PLUGIN_LIB)
        needed, paths = elf_dynamic(data)
        print(f"{PLUGIN_LIB}: NEEDED {', '.join(needed)}; RUNPATH {':'.join(paths) or '-'}")
        other = [n for n in needed if not SYSTEM_LIBS.match(n) and not PLUGIN_NEEDED.match(n)]
        if other:
            problems.append(f"{PLUGIN_LIB} needs libraries beyond glibc, libgcc_s, cuDNN: {other}")
        if "libcudnn.so.9" not in needed:
            problems.append(f"{PLUGIN_LIB} does not need libcudnn.so.9: {needed}")
        if paths != PLUGIN_RUNPATH:
            problems.append(f"{PLUGIN_LIB}: RUNPATH {paths}, want {PLUGIN_RUNPATH}")
        exported = exported_symbols(data)
        print(f"{PLUGIN_LIB}: exports {', '.join(exported)}")
        if exported != ["rnnx_backend_plugin_entry"]:
            problems.append(f"{PLUGIN_LIB} exports more than its entry: {exported[:20]}")
        # An absolute path of the building machine (the toolkit's lib folder, the checkout).
        leaked = sorted(set(re.findall(rb"(?:/usr/local/cuda|/usr/lib/x86_64-linux-gnu|"
                                       rb"/home/|/root/|/work/|/tmp/)[\w./+-]*", data)))
        if leaked:
            problems.append(f"{PLUGIN_LIB} holds paths of the building machine: {leaked[:5]}")
    meta_dir = next((n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")), "")
    meta = z.read(f"{meta_dir}/METADATA").decode() if meta_dir else ""
    version = re.search(r"^Version: (\S+)", meta, re.M)
    version = version.group(1) if version else "?"
    for want in [f"Requires-Dist: rnnx=={version}", "Requires-Dist: nvidia-cudnn-cu13",
                 "Requires-Dist: nvidia-cublas"]:
        if want not in meta:
            problems.append(f"METADATA lacks {want!r}")
    print("requires: " + ", ".join(re.findall(r"^Requires-Dist: (.*)$", meta, re.M)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--plat", required=True)
    ap.add_argument("--cuda-plugin", action="store_true", help="the rnnx-cuda wheel")
    args = ap.parse_args()
    problems = []
    if args.cuda_plugin:
        name = args.wheel.rsplit("/", 1)[-1]
        with zipfile.ZipFile(args.wheel) as z:
            check_cuda_plugin(z, name, args.plat, problems)
        for p in problems:
            print(f"check_wheel_contents: FAILED: {p}", file=sys.stderr)
        if problems:
            sys.exit(1)
        print(f"check_wheel_contents: {name}: all checks passed")
        return
    name = args.wheel.rsplit("/", 1)[-1]
    if not name.endswith(f"-{args.plat}.whl"):
        problems.append(f"the wheel's platform tag is not {args.plat}: {name}")

    with zipfile.ZipFile(args.wheel) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        by_folder = collections.OrderedDict()
        for i in infos:
            folder = "/".join(i.filename.split("/")[:-1][:3]) or "."
            count, size = by_folder.get(folder, (0, 0))
            by_folder[folder] = (count + 1, size + i.file_size)
        print("contents (files, bytes uncompressed, by folder):")
        for folder, (count, size) in by_folder.items():
            print(f"  {count:4d} {size:11,d}  {folder}/")
        total = sum(i.file_size for i in infos)
        print(f"  {len(infos):4d} {total:11,d}  (all)")

        grafted = [n for n in names if re.match(r"^[^/]+\.libs/", n)]
        if grafted:
            problems.append(f"auditwheel bundled libraries: {grafted}")
        libs = [n for n in names if re.match(r"^rnnx/lib/librnnx", n)]
        if libs != ["rnnx/lib/librnnx.so"]:
            problems.append(f"want exactly one library file rnnx/lib/librnnx.so, got {libs}")
        extension = [n for n in names if re.match(r"^rnnx/_rnnx\..*so$", n)]
        if len(extension) != 1:
            problems.append(f"want one extension rnnx/_rnnx*.so, got {extension}")
        for want in ["rnnx/__init__.py", "rnnx/_cli.py", "rnnx/torch.py", "rnnx/bin/rnnx",
                     "rnnx/include/rnnx/rnnx.hpp", "rnnx/include/rnnx/rnnx.h",
                     "rnnx/include/rnnx/version.hpp", "rnnx/lib/cmake/rnnx/rnnxConfig.cmake",
                     "rnnx/lib/cmake/rnnx/rnnxConfigVersion.cmake",
                     "rnnx/lib/cmake/rnnx/rnnxTargets.cmake", "rnnx/licenses/README.txt"]:
            if want not in names:
                problems.append(f"missing {want}")
        if "rnnx/bin/rnnx" in names:
            mode = z.getinfo("rnnx/bin/rnnx").external_attr >> 16
            if not mode & stat.S_IXUSR:
                problems.append(f"rnnx/bin/rnnx is not executable (mode {oct(mode)})")
        if any(n.startswith(("tests/", "rnnx/tests/", "bench/")) for n in names):
            problems.append("test or bench files in the wheel")

        # Licences: the README names each file, each file is there.
        if "rnnx/licenses/README.txt" in names:
            listed = check_licences(z, "rnnx", problems)
            if not listed:
                problems.append("rnnx/licenses/README.txt lists no licence")
        own = [n for n in names if re.match(r"^[^/]+\.dist-info/licenses/", n)]
        print("project licence (dist-info): " + (", ".join(own) if own else "none"))

        # Every ELF file: what it needs and where it looks.
        for i in infos:
            data = z.read(i.filename)
            if not data.startswith(b"\x7fELF"):
                continue
            needed, paths = elf_dynamic(data)
            other = [n for n in needed if not SYSTEM_LIBS.match(n) and n != "librnnx.so"]
            print(f"{i.filename}: NEEDED {', '.join(needed)}; RUNPATH {':'.join(paths) or '-'}")
            if other:
                problems.append(f"{i.filename} needs libraries outside glibc: {other}")
            if any(p == "" or not p.startswith("$ORIGIN") for p in paths):
                problems.append(f"{i.filename}: RUNPATH entry not relative to $ORIGIN: {paths}")
            key = re.sub(r"\..*$", "", i.filename) if "/_rnnx" in i.filename else i.filename
            if key in EXPECTED_RPATH and EXPECTED_RPATH[key] not in paths:
                problems.append(f"{i.filename}: RUNPATH {paths} lacks {EXPECTED_RPATH[key]}")

        meta_dir = next((n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")), "")
        entry = z.read(f"{meta_dir}/entry_points.txt").decode() if meta_dir else ""
        if not re.search(r"^\[console_scripts\]\s*\nrnnx\s*=\s*rnnx\._cli:main", entry, re.M):
            problems.append("no console script rnnx = rnnx._cli:main in entry_points.txt")
        if not re.search(r"^\[cmake\.prefix\]\s*\nrnnx\s*=\s*rnnx\s*$", entry, re.M):
            problems.append("no cmake.prefix entry point in entry_points.txt")
        meta = z.read(f"{meta_dir}/METADATA").decode() if meta_dir else ""
        for want in ["Requires-Python: >=3.8", "Requires-Dist: numpy",
                     "Requires-Dist: torch; extra == \"torch\""]:
            if want not in meta:
                problems.append(f"METADATA lacks {want!r}")

    for p in problems:
        print(f"check_wheel_contents: FAILED: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check_wheel_contents: {name}: all checks passed")


if __name__ == "__main__":
    main()
