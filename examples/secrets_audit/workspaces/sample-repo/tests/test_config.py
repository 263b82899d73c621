"""Config tests with a fixture key."""
FIXTURE_KEY = "AKIAFIXTUREONLY00000X"


def test_region():
    assert FIXTURE_KEY.startswith("AKIA")
