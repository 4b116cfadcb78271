"""DMLError and the HRESULTs the emulator reports."""

from __future__ import annotations

S_OK = 0
E_NOTIMPL = 0x80004001
E_NOINTERFACE = 0x80004002
E_INVALIDARG = 0x80070057
E_OUTOFMEMORY = 0x8007000E
DXGI_ERROR_UNSUPPORTED = 0x887A0004
DXGI_ERROR_DEVICE_REMOVED = 0x887A0005

HRESULT_NAMES = {
    S_OK: "S_OK",
    E_NOTIMPL: "E_NOTIMPL",
    E_NOINTERFACE: "E_NOINTERFACE",
    E_INVALIDARG: "E_INVALIDARG",
    E_OUTOFMEMORY: "E_OUTOFMEMORY",
    DXGI_ERROR_UNSUPPORTED: "DXGI_ERROR_UNSUPPORTED",
    DXGI_ERROR_DEVICE_REMOVED: "DXGI_ERROR_DEVICE_REMOVED",
}


class DMLError(Exception):
    """A failed DirectML call: ``hresult`` (int), ``name`` ("E_INVALIDARG") and a message that
    names the operator, field, value, rule and, where relevant, the feature level that allows it."""

    def __init__(self, hresult: int, message: str):
        self.hresult = hresult
        self.name = HRESULT_NAMES.get(hresult, f"0x{hresult:08X}")
        self.message = message
        super().__init__(f"{self.name}: {message}")


def invalid_arg(message: str) -> DMLError:
    return DMLError(E_INVALIDARG, message)
