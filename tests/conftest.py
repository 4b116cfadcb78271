"""Test options: ``--fuzz long`` selects the longer fuzzing profile (default: bounded)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("bounded", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])


def pytest_addoption(parser):
    parser.addoption("--fuzz", choices=("bounded", "long"), default="bounded",
                     help="fuzzing profile: bounded (every run) or long (thousands of cases)")


def pytest_configure(config):
    config.fuzz_profile = config.getoption("--fuzz")
