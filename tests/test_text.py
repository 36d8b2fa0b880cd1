from hypothesis import given
from hypothesis import strategies as st

from opsbot.tools.text import cut_middle


@given(text=st.text(max_size=2000), keep=st.integers(0, 2500), share=st.floats(0, 1))
def test_cut_middle_keeps_head_and_tail_and_counts_the_cut(text: str, keep: int, share: float) -> None:
    short = cut_middle(text, keep, share)
    if len(text) <= keep:
        assert short.text == text and short.cut == 0
        return
    assert short.head + short.tail == keep and short.head + short.tail + short.cut == len(text)
    assert short.text.startswith(text[: short.head])
    assert short.text.endswith(text[len(text) - short.tail :])
    assert f"[... {short.cut:,} characters cut ...]" in short.text
