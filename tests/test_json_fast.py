"""The orjson fast path of dumps_bytes must agree with the careful dumps on every value."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pisession._json import dumps, dumps_bytes

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(max_size=5) | st.integers(0, 50).map(str), children, max_size=5)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_fast_path_equals_careful_path(value: dict[str, Any]) -> None:
    assert dumps_bytes(value) == dumps(value).encode("utf-8", "surrogatepass")


def test_fast_path_catches_each_known_difference() -> None:
    for value, expected in [
        ({"a": 5.0}, b'{"a":5}'),
        ({"a": -0.0}, b'{"a":0}'),
        ({"a": 1e16}, b'{"a":10000000000000000}'),
        ({"a": 2.5e-6}, b'{"a":0.0000025}'),
        ({"a": 2**60}, b'{"a":1152921504606847000}'),
        ({"b": 1, "2": 2, "1": 1}, b'{"1":1,"2":2,"b":1}'),
        ({"a": "\ud800"}, b'{"a":"\\ud800"}'),
    ]:
        assert dumps_bytes(value) == expected


def test_fast_path_agrees_on_every_exponent_in_every_position() -> None:
    # orjson and JavaScript switch to exponent notation at different magnitudes (1e16 / 1e21
    # and 1e-5 / 1e-6); a number ends at "," "}" or "]" depending on where it sits.
    for exponent in range(-330, 309):
        for mantissa in (1.0, 2.5, 9.999999999999999):
            number = mantissa * 10.0**exponent if exponent > -300 else float(f"{mantissa}e{exponent}")
            for value in (
                {"a": number},
                {"a": number, "b": 1},
                {"a": [number]},
                {"a": [number, 1]},
                {"a": -number},
            ):
                assert dumps_bytes(value) == dumps(value).encode("utf-8"), value
