"""pytest fixtures shared by every test folder (the builders themselves live in tests/helpers/builders.py)."""
from __future__ import annotations

import pytest

from tests.helpers.builders import make_case


@pytest.fixture
def case_factory():
    return make_case
