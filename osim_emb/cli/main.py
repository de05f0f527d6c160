"""Command line: ``osim-emb <command> ...`` (``osim-emb --help`` lists the commands)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys
import traceback
import warnings
from typing import Sequence

from osim_emb._version import __version__
from osim_emb.cli import (
    batch,
    body_kinematics,
    c3d_export,
    convert,
    fit_paths,
    fit_rhythm,
    inspect_model,
    inverse_dynamics,
    inverse_kinematics,
    joint_reactions,
    moment_arms,
    plot,
    rhythm,
    run,
    scale,
    simulate,
    simulate_muscles,
    smooth_paths,
    static_optimization,
)
from osim_emb.cli.common import _Help

__all__ = ["main", "build_parser", "COMMAND_MODULES"]

#: The commands in the order of ``osim-emb --help``: each module's ``register(sub)`` adds its subparser.
COMMAND_MODULES = [
    inspect_model,
    convert,
    run,
    moment_arms,
    plot,
    rhythm,
    fit_rhythm,
    simulate,
    scale,
    c3d_export,
    inverse_kinematics,
    inverse_dynamics,
    static_optimization,
    joint_reactions,
    body_kinematics,
    simulate_muscles,
    fit_paths,
    smooth_paths,
    batch,
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="osim-emb",
        description="Empirically-based multibody dynamics for OpenSim models: import .osim files into "
                    "minimal-coordinate form, compute moment arms, apply shoulder rhythms, simulate.")
    p.add_argument("--version", action="version", version=f"osim-emb {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    for module in COMMAND_MODULES:
        module.register(sub)
    for name, sp in sub.choices.items():
        sp.formatter_class = _Help  # every command's --help shows the defaults
        _add_common_options(sp, in_subcommand=True)
        if name in WRITING_COMMANDS:
            sp.add_argument("--overwrite", action="store_true",
                            help="replace existing outputs (default: refuse to write over anything)")
    _add_common_options(p, in_subcommand=False)
    return p


#: Commands that write files (each takes --overwrite; see docs/cli.md).
WRITING_COMMANDS = ("convert", "run", "simulate", "inverse-kinematics", "inverse-dynamics", "static-optimization", "joint-reactions", "scale", "moment-arms", "rhythm",
                    "fit-rhythm", "fit-paths", "smooth-paths", "simulate-muscles", "plot", "batch",
                    "c3d-export", "body-kinematics")


def _add_common_options(p: argparse.ArgumentParser, in_subcommand: bool) -> None:
    """-v/-q/--debug, accepted before or after the command."""
    extra = {"default": argparse.SUPPRESS} if in_subcommand else {}
    p.add_argument("-v", "--verbose", action="count", help="more messages (-vv: debugging messages)",
                   **(extra or {"default": 0}))
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines, no warnings (errors and the result lines still print)",
                   **(extra or {"default": False}))
    p.add_argument("--debug", action="store_true", help="show the traceback of an error",
                   **(extra or {"default": False}))


def configure_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Warnings by default, INFO with -v, DEBUG with -vv, errors only with -q; messages go to stderr."""
    level = logging.ERROR if quiet else (logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1
                                         else logging.WARNING)
    package = logging.getLogger("osim_emb")
    for h in list(package.handlers):
        if getattr(h, "_osim_emb_cli", False):
            package.removeHandler(h)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("osim-emb: %(levelname)s: %(message)s"))
    h._osim_emb_cli = True
    package.addHandler(h)
    package.setLevel(level)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_message(err: BaseException, args: argparse.Namespace) -> str:
    """One line naming the file and the reason."""
    if isinstance(err, OSError):
        what = err.strerror or str(err)
        if err.errno == errno.ENOSPC:
            what = "no space left on the device"
        elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            what = f"permission denied ({err.strerror})" if err.errno != errno.EROFS else "read-only file system"
        name = err.filename if err.filename is not None else None
        if err.filename2:
            name = f"{name} -> {err.filename2}"
        return _one_line(f"{name}: {what}" if name else what)
    if isinstance(err, KeyError):
        key = err.args[0] if err.args else "?"
        source = getattr(args, "model", None) or "the input"
        if isinstance(key, str) and " " in key.strip():  # a sentence (raise KeyError("no body named 'x'")), not a key
            return _one_line(key if str(source) in key else f"{source}: {key}")
        return _one_line(f"{source}: missing or unknown name {key!r}")
    msg = _one_line(str(err)) or type(err).__name__
    if hasattr(args, "lenient"):  # the importer's advice, in the command line's terms
        msg = msg.replace("load with strict=False to", "use --lenient to")
    inputs = [str(x) for x in (getattr(args, "model", None), getattr(args, "motion", None)) if x]
    if inputs and not any(i in msg for i in inputs) and isinstance(err, (RuntimeError, ArithmeticError)):
        msg = f"{inputs[0]}: {msg}"  # e.g. an integration that failed: say which model
    return msg


def _warning_as_log_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A Python warning raised during a command, written as its other warnings are (one line, no source line)."""
    logging.getLogger("osim_emb").warning("%s", _one_line(str(message)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    package = logging.getLogger("osim_emb")
    saved = package.level, list(package.handlers)
    configure_logging(getattr(args, "verbose", 0) or 0, getattr(args, "quiet", False))
    try:
        with _terminate_as_interrupt(), warnings.catch_warnings():  # warnings as the command's one-line warnings
            warnings.showwarning = _warning_as_log_line
            return _run_command(args)
    finally:  # leave the logging set-up as it was (main may be called from a program or a test)
        package.setLevel(saved[0])
        package.handlers[:] = saved[1]


#: commands whose work runs in numba kernels: the first run after installation compiles them
_COMPILING_COMMANDS = ("run", "moment-arms", "plot", "rhythm", "simulate", "inverse-dynamics", "simulate-muscles",
                       "fit-paths", "smooth-paths", "batch", "inverse-kinematics")


def _first_compile_notice(args: argparse.Namespace) -> None:
    """Say so (stderr) when this command's kernels are not compiled yet: a fresh installation spends a minute or two
    in numba before the first result, which would otherwise look like a hang."""
    if args.command not in _COMPILING_COMMANDS or getattr(args, "quiet", False):
        return
    from osim_emb.core._accel import compiles_at_first_call
    from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
    kernels = [lengths_moment_arms_kernel]
    if args.command == "inverse-kinematics":
        from osim_emb.simulation.inverse_kinematics_kernels import solve_frames
        kernels = [solve_frames]
    if args.command == "simulate-muscles" and getattr(args, "method", "auto") in ("auto", "RK45-jit"):
        from osim_emb.simulation.muscle_driven_jit import rk45_run
        kernels.append(rk45_run)
    if args.command == "simulate-muscles" and getattr(args, "method", "auto") == "BDF-jit":
        from osim_emb.simulation.muscle_driven_bdf import bdf_run
        kernels.append(bdf_run)
    if any(compiles_at_first_call(k) for k in kernels):
        # measured cold on 2 cores (round 24): the main job's kernels 78 s, simulate-muscles on arm26 260 s
        span = "4-5 min" if args.command == "simulate-muscles" else "1-2 min"
        print(f"osim-emb {args.command}: numba compiles the kernels this command uses ({span} after installation "
              "or an update, and again for a model whose layout the cache has not seen; cached for every later run)",
              file=sys.stderr, flush=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``), raised like Ctrl-C so that the temporary outputs are removed."""


@contextlib.contextmanager
def _terminate_as_interrupt():
    """While the command runs, SIGTERM raises :class:`Terminated` in this process (child processes it forked die as
    usual); a second SIGTERM during the clean-up is ignored.  Outside the main thread nothing changes."""
    owner = os.getpid()

    def terminate(signum, frame):
        if os.getpid() != owner:  # a forked worker: the default action
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_command(args: argparse.Namespace) -> int:
    prefix = f"osim-emb {args.command}: error:"
    try:
        if getattr(args, "time_range", None) is not None:  # the option of several commands, one check
            from osim_emb.cli.common import check_time_range
            check_time_range(args.time_range, one_frame=getattr(args, "time_range_one_frame", False))
        _first_compile_notice(args)
        from osim_emb.progress import CompileProgress
        with CompileProgress(enabled=args.command in _COMPILING_COMMANDS and not getattr(args, "quiet", False)):
            return int(args.func(args) or 0)
    except BrokenPipeError:  # the reader went away (osim-emb inspect M.osim | head): stop quietly, as Unix tools do
        try:
            import os
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except KeyboardInterrupt as err:
        if args.debug:
            traceback.print_exc()
        how = "terminated (SIGTERM)" if isinstance(err, Terminated) else "interrupted"
        print(f"osim-emb {args.command}: {how}; no output was written or replaced", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(err, Terminated) else 130
    except (ValueError, KeyError, OSError, ImportError, RuntimeError, ArithmeticError) as err:
        if args.debug:
            traceback.print_exc()
        print(f"{prefix} {error_message(err, args)}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: still one line, the traceback with --debug
        if args.debug:
            traceback.print_exc()
        print(f"{prefix} internal error {type(err).__name__}: {_one_line(err)} (run with --debug for the traceback)",
              file=sys.stderr)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
