"""Errors a user sees: each renders as one line, never a traceback."""


class SimError(Exception):
    """Invalid input (trace, register combination, DMA range...): exit status 2."""

    exit_code = 2


class NotImplementedFeature(SimError):
    """A unit or feature the simulator does not model yet."""

    def __init__(self, unit: str, feature: str):
        super().__init__(f"not implemented: {unit} {feature}")
        self.unit = unit
        self.feature = feature


class ConfigurationError(SimError):
    """A register programs something the hardware configuration lacks or forbids."""


class CheckFailed(Exception):
    """A trace check (CRC, dump, register read) did not match: exit status 1."""

    exit_code = 1
