"""The command line ``osim-emb``: one module per command, the parser and the error path in ``main``."""


def main(argv=None) -> int:
    from osim_emb.cli.main import main as run
    return run(argv)
