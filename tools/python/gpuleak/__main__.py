"""`python -m gpuleak ...` and the `gpuleak` console command of the wheel: the native command line.

The process becomes the bundled gpuleak binary (exec, not a child), so signals, the exit status
and the terminal are the CLI's own, and it finds the shim and the viewer next to itself.
"""

import os
import sys

from ._locate import bundled_cli


def main():
    cli = bundled_cli()
    if cli is None:
        sys.stderr.write("gpuleak: this gpuleak Python package has no command line next to it "
                         "(installed from tools/python?); install the gpuleak wheel or the Debian package\n")
        return 2
    try:
        os.execv(cli, [cli] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("gpuleak: cannot run %s: %s\n" % (cli, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
