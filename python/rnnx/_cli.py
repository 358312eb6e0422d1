"""The `rnnx` console script of the wheel: runs the C++ command bundled in the package
(rnnx/bin/rnnx) with the same arguments; the process becomes that command, so its output and
exit status are the command's."""

import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "rnnx")
    if not os.access(exe, os.X_OK):
        sys.exit(f"rnnx: the command-line tool is not in this installation ({exe} is missing); "
                 "it comes with the wheel, or with `cmake --install` of a build with "
                 "RNNX_BUILD_TOOLS")
    # The command finds the rnnx-cuda wheel's plugin through the environment (it is not
    # beside librnnx): `rnnx info` then lists it, `rnnx run --backend cuda` uses it.
    from ._plugins import installed_plugin_path
    plugin = installed_plugin_path("cuda")
    if plugin is not None and not os.environ.get("RNNX_CUDA_PLUGIN"):
        os.environ["RNNX_CUDA_PLUGIN"] = plugin
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, ["rnnx"] + sys.argv[1:])


if __name__ == "__main__":
    main()
