"""Every command's --help states the default of every option that has one."""

import argparse

import pytest

from osim_emb.cli.main import build_parser


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices.items())


@pytest.mark.parametrize("name,command", _commands(), ids=[n for n, _ in _commands()])
def test_help_shows_every_default(name, command):
    text = " ".join(command.format_help().split())
    for action in command._actions:
        if action.help == argparse.SUPPRESS or action.default in (None, False, "", argparse.SUPPRESS):
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)) or not action.option_strings:
            continue
        assert action.help, f"{name} {action.option_strings[0]}: no help, so its default is not shown"
        helped = " ".join(command.formatter_class(name)._get_help_string(action).split())
        assert "default" in helped, f"{name} {action.option_strings[0]}: help does not state the default"
        assert helped.split("%(")[0][:30] in text  # and the line is in the rendered help


def test_each_command_module_registers_one_command_and_writing_commands_exist():
    """cli/main.py's COMMAND_MODULES: one command per module (a new command is one line there)."""
    from osim_emb.cli.main import COMMAND_MODULES, WRITING_COMMANDS
    names = []
    for module in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        module.register(sub)
        assert len(sub.choices) == 1, f"{module.__name__} registers {sorted(sub.choices)}"
        names += list(sub.choices)
    assert sorted(names) == [n for n, _ in _commands()]  # every command of the parser comes from one module
    assert set(WRITING_COMMANDS) <= set(names), sorted(set(WRITING_COMMANDS) - set(names))


def test_first_run_after_installation_says_numba_is_compiling(tmp_path):
    """With an empty numba cache (NUMBA_CACHE_DIR) a compiling command says so before the long first call; with the
    kernels compiled in this process, or for a command that compiles nothing, it says nothing."""
    import subprocess
    import sys
    code = ("import sys; from osim_emb.cli.main import _first_compile_notice as f; import argparse; "
            "f(argparse.Namespace(command=sys.argv[1], quiet=False, method='auto'))")
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty")}
    cold = subprocess.run([sys.executable, "-c", code, "simulate-muscles"], env=env, capture_output=True, text=True)
    assert "numba compiles the kernels this command uses" in cold.stderr
    other = subprocess.run([sys.executable, "-c", code, "inspect"], env=env, capture_output=True, text=True)
    assert other.stderr == ""  # inspect compiles nothing
    from osim_emb.core._accel import compiles_at_first_call
    from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms
    import os
    model = load_osim(os.path.join(os.environ.get("OSIM_EMB_MODELS", "../shared/models"), "arm26.osim"))
    lengths_and_moment_arms(model, model.default_q)
    assert not compiles_at_first_call(lengths_moment_arms_kernel)


def test_python_dash_m_runs_the_command_line():
    """``python -m osim_emb`` is the ``osim-emb`` command (a user without the script on PATH)."""
    import subprocess
    import sys
    import osim_emb
    done = subprocess.run([sys.executable, "-m", "osim_emb", "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert osim_emb.__version__ in done.stdout + done.stderr
