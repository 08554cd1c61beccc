"""RUBIK: data reshape engine (not modelled yet)."""
