"""Each compiled kernel is compiled once per variant the caller needs: the joint-variable program without the
closed-chain kernels when it has no closed chain (eval_program's ``chains`` = None prunes that branch), and one
signature for read-only and copied (writable) program arrays alike."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from osim_emb.core import compiled_kernels as K
from osim_emb.core._accel import HAVE_NUMBA
from osim_emb.core.compiled import joint_program
from osim_emb.core.functions.program import function_program
from osim_emb.core.synthetic import serial_chain_model
from osim_emb.io.builtin_models import load_builtin
from osim_emb.seeds.mechanisms import andrews as A

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


def test_chain_support_is_compiled_only_for_programs_with_closed_chains():
    assert joint_program(serial_chain_model(2)).chains is None
    par = A.AndrewsParameters()
    chained = joint_program(A.andrews_model(par, A.andrews_chain(par).variables))
    assert chained.chains is True
    q = np.zeros((1, chained.n_q))
    nodes = chained.frame_nodes
    k = nodes.size
    out = np.empty((1, k)), np.empty((1, k, chained.n_q)), np.empty((0, k, chained.n_q, chained.n_q))
    with pytest.raises(ValueError, match="closed chain"):  # never a silent skip of the chain's node
        K.joint_variable_batch(chained.ints, chained.flts, chained._no_ext, q, nodes, 1, *out, None)
    val, grad, _ = chained.evaluate(q + 0.1, order=1)  # the variant with chain support
    assert np.all(np.isfinite(val)) and np.all(np.isfinite(grad))


def test_copied_programs_reuse_the_compiled_signature():
    model = load_builtin()
    f = next(c.function for c in model.extras["document"].couplers if len(c.independents) > 1)
    x = np.full((2, f.n_inputs), 0.3)
    before = function_program(f).evaluate(x, 2)
    twin = copy.deepcopy(f)  # a deep copy (rhythm.apply copies the document) has writable program arrays
    assert twin.__dict__["_function_program"].ints.flags.writeable
    after = function_program(twin).evaluate(x, 2)
    assert np.array_equal(before.value, after.value) and np.array_equal(before.hessian, after.hessian)
    assert all(not sig[0].mutable and not sig[1].mutable for sig in K.joint_variable_batch.signatures)
