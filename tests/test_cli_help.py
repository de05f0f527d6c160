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
