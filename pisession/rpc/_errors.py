"""What the RPC client raises: children of :class:`pisession.PisessionError`."""

from __future__ import annotations

from .._errors import PisessionError

__all__ = ["RpcError", "RpcCommandError", "PiExitedError", "HandoffError"]


class RpcError(PisessionError):
    """Base class of the errors of :mod:`pisession.rpc`."""


class RpcCommandError(RpcError):
    """Pi answered a command with ``success: false``; ``command`` is the command's type and
    ``error`` Pi's message (``str(error)`` says both: ``get_entries failed: Entry not found: x``)."""

    def __init__(self, command: str, error: str) -> None:
        super().__init__(f"{command} failed: {error}")
        self.command = command
        self.error = error


class PiExitedError(RpcError):
    """The Pi process ended (crashed, was killed, or was closed) while the client needed it;
    ``returncode`` is its exit status (negative: the signal) and ``stderr`` the last of what it
    wrote there, which the message quotes."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class HandoffError(RpcError):
    """An edit made through :meth:`PiRpcClient.handoff` was not taken up by Pi as it was made.

    Raised when something other than the client wrote to the session while the edit was being
    made (Pi itself through an extension or a timer, another program), or when Pi's leaf after
    the reload is not the one pisession left. Nothing is lost from the file: Pi has reloaded it
    (unless ``reloaded`` is false) and holds every entry; the attributes say what happened:
    ``foreign`` the ids of the entries the client did not write, ``expected_leaf`` the leaf
    pisession left, ``pi_leaf`` Pi's leaf afterwards.
    """

    def __init__(
        self,
        message: str,
        *,
        foreign: tuple[str, ...] = (),
        expected_leaf: str | None = None,
        pi_leaf: str | None = None,
        reloaded: bool = True,
    ) -> None:
        super().__init__(message)
        self.foreign = foreign
        self.expected_leaf = expected_leaf
        self.pi_leaf = pi_leaf
        self.reloaded = reloaded
