"""The SDP decoder's stage records (X1/X2, Y, LUT) are remembered by their fields' values
(sim.sdp.config._remembered): a layer gets the record its own fields make, whichever layer
made an equal one before, and fields that differ in any one value make another record."""

import numpy as np
import pytest

from sim.sdp import config

SEED = 20261127
STAGES = {  # the record's maker and its fields
    "x1": (lambda f: config._x_stage(f, "bs"), config._make_x_stage, config._X_KEYS["bs"]),
    "x2": (lambda f: config._x_stage(f, "bn"), config._make_x_stage, config._X_KEYS["bn"]),
    "y": (config._y_stage, config._make_y_stage, config._Y_KEYS),
    "lut": (config._lut, config._make_lut, config._LUT_KEYS),
}


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_record_is_the_one_its_fields_make(stage, monkeypatch):
    monkeypatch.setattr(config, "_STAGES", {})
    decode, make, keys = STAGES[stage]
    rng = np.random.default_rng(SEED)
    fields = [dict(zip(keys, map(int, rng.integers(0, 1 << 32, len(keys))), strict=True))
              for _ in range(4)]
    # one value changed at a time, then back to the first: each its own record
    for key in keys:
        fields.append(dict(fields[0], **{key: fields[0][key] ^ 1}))
    fields.append(dict(fields[0]))
    records = [decode(f) for f in fields]
    for f, record in zip(fields, records, strict=True):
        assert record == make(*[f[key] for key in keys])
    assert records[-1] is records[0]  # the same values: the record made before
    assert len(config._STAGES) == len(fields) - 1  # one record per set of values


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(config, "_STAGES", {})
    fields = dict.fromkeys(config._LUT_KEYS, 0)
    for i in range(config.MEMO_SIZE + 3):
        assert config._lut(dict(fields, lut_le_start=i)).le_start == i
    assert len(config._STAGES) <= config.MEMO_SIZE
