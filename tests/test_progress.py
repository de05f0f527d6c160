"""Progress: one line per stage when the output is not a terminal (no carriage returns in logs)."""

import io

from osim_emb.progress import Progress


def test_one_line_per_stage_when_redirected():
    out = io.StringIO()
    with Progress("OpenSim computeMomentArm", 500, stream=out) as p:
        for _ in range(500):
            p.advance()
    text = out.getvalue()
    assert "\r" not in text and text.count("\n") == 1 and "500/500" in text


def test_quiet_writes_nothing():
    out = io.StringIO()
    with Progress("x", 3, stream=out, enabled=False) as p:
        p.advance(3)
    assert out.getvalue() == ""


def _fresh_kernel():
    """A numba function compiled at its first call (not cached)."""
    import numba

    @numba.njit
    def twice_plus_one(x):
        return 2.0 * x + 1.0

    return twice_plus_one


def test_compiling_is_reported_and_a_compiled_kernel_is_not():
    """A numba compile inside the block is counted and reported in one line (redirected stderr); a second call of
    the same kernel compiles nothing and reports nothing; disabled, nothing is written."""
    from osim_emb.progress import CompileProgress
    kernel = _fresh_kernel()
    out = io.StringIO()
    with CompileProgress(stream=out) as p:
        assert kernel(2.0) == 5.0
    assert p.compiled == 1 and p.seconds > 0
    assert out.getvalue().startswith("  numba compiled 1 function in ")
    again = io.StringIO()
    with CompileProgress(stream=again) as p:
        kernel(3.0)
    assert p.compiled == 0 and again.getvalue() == ""
    quiet = io.StringIO()
    with CompileProgress(stream=quiet, enabled=False):
        _fresh_kernel()(1.0)
    assert quiet.getvalue() == ""


def test_compiling_on_a_terminal_shows_the_function_being_compiled():
    from osim_emb.progress import CompileProgress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    with CompileProgress(stream=out):
        _fresh_kernel()(1.0)
    text = out.getvalue()
    assert "numba compiling kernels: 0 compiled" in text and "twice_plus_one" in text


def test_a_progress_stage_counts_compiling_once_even_inside_a_command():
    """A Progress stage shows numba compiling inside it; inside a command's CompileProgress only the outer one
    counts (one report, not two)."""
    from osim_emb.progress import CompileProgress
    out = io.StringIO()
    with Progress("stage", 1, stream=out) as p:
        _fresh_kernel()(1.0)
        p.advance()
    assert "numba compiled 1 function in" in out.getvalue() and "stage: 1/1" in out.getvalue()
    outer, inner = io.StringIO(), io.StringIO()
    with CompileProgress(stream=outer) as c:
        with Progress("stage", 1, stream=inner):
            _fresh_kernel()(1.0)
    assert c.compiled == 1 and "numba compiled" in outer.getvalue() and "numba compiled" not in inner.getvalue()
