"""The state layout is the reference's ``get_state()``."""

import numpy as np
from translation import state as S
from translation.tests.refgames import reference


def test_reference_states_round_trip():
    ref = reference()
    ref.reset(4)
    want = ref.get_state()
    assert set(want) == set(S.FIELDS)
    for k, (shape, dtype, _) in S.FIELDS.items():
        assert want[k].shape == shape and want[k].dtype == dtype, k
    back = S.to_arrays(S.from_arrays(want))
    assert all(np.array_equal(back[k], want[k]) for k in want)
    blank = S.to_arrays(S.blank())
    assert all(blank[k].shape == S.FIELDS[k][0] for k in blank)
