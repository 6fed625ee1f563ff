"""load_letter(binary=False): the 26 original classes of the bundled file (issue 24)."""

import numpy as np
import pytest

from dpcore.datasets import load_letter
from dpcore.datasets._letter import load_letter_raw


def test_letter_26_classes_match_the_raw_file_and_the_binary_encoding():
    multi, binary, raw = load_letter("all", binary=False), load_letter("all"), load_letter_raw("all")
    np.testing.assert_array_equal(multi.X, binary.X)
    np.testing.assert_array_equal(multi.y, np.asarray(raw.target).astype(str))
    assert sorted(set(multi.y.tolist())) == list(multi.classes) and len(multi.classes) == 26
    np.testing.assert_array_equal(np.where(multi.y >= "N", 1.0, -1.0), binary.y)
    assert load_letter("train", binary=False).X.shape == (16000, 16)


def test_binary_flag_is_validated():
    with pytest.raises(TypeError, match="binary"):
        load_letter("train", binary="no")
