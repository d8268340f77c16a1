"""A keyring backend in memory: tests and benchmarks never touch the machine's keychain."""

from __future__ import annotations

from keyring.backend import KeyringBackend

TEST_KEY = "sk-ant-test-SECRET-7f3a9c"  # what tests store; a test proves it lands nowhere else


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.secrets.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.secrets[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.secrets.pop((service, username), None)
