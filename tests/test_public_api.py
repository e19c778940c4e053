import sparkstorm


def test_all_is_sorted_and_complete():
    assert sparkstorm.__all__ == sorted(sparkstorm.__all__)
    for name in sparkstorm.__all__:
        assert hasattr(sparkstorm, name), name
    public = {n for n in dir(sparkstorm) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(sparkstorm.__all__)
