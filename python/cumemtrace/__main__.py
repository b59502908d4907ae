# SPDX-License-Identifier: MIT
"""`python -m cumemtrace ARGS` and the wheel's `cumemtrace` script: the
command inside the package, run in this process's place (its exit status,
signals and standard streams are the command's)."""
import os
import sys

from . import _native


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli = _native.cli()
    except _native.NativeNotFound as e:
        print(e, file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cli, [cli, *args])
    return 127  # not reached: execv returns only by raising


if __name__ == "__main__":
    sys.exit(main())
