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
