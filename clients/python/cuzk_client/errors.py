"""The exceptions of cuzk_client."""
from __future__ import annotations

from typing import Any, Dict, Optional

# The members every RFC 9457 problem document of cuzk-api has; the rest are "extra"
# (position, line, column, signal, index, limit, parameter, ...: docs/api.md, "Errors").
_STANDARD = ("type", "title", "status", "detail", "code", "instance")


class CuzkError(Exception):
    """Base of every error this package raises."""


class TransportError(CuzkError):
    """No answer from the API: the connection failed, was cut or timed out.

    A request that got no answer may or may not have been carried out: send a POST
    again with the same ``idempotency_key`` to get the same job back, never a second.
    """


class ApiError(CuzkError):
    """The API answered with an error: an RFC 9457 problem document.

    ``status``, ``type`` (the CLI's exit-table name), ``code`` (the finer word, e.g.
    ``no_such_circuit``, ``quota``), ``title`` and ``detail`` are attributes; the
    whole document is ``problem`` and the members beyond the standard ones are
    ``extra`` and also readable as attributes (``e.signal``, ``e.position``).
    ``retry_after`` is the answer's Retry-After in seconds, or None.
    """

    status: int
    type: str
    code: str
    title: str
    detail: str
    problem: Dict[str, Any]
    retry_after: Optional[float]

    def __init__(self, status: int, problem: Dict[str, Any], retry_after: Optional[float] = None):
        self.status = status
        self.problem = problem
        self.type = str(problem.get("type", ""))
        self.code = str(problem.get("code", ""))
        self.title = str(problem.get("title", ""))
        self.detail = str(problem.get("detail", ""))
        self.retry_after = retry_after
        super().__init__(f"{status} {self.code or self.title}: {self.detail}")

    @property
    def extra(self) -> Dict[str, Any]:
        """The problem's members beyond type, title, status, detail, code, instance."""
        return {k: v for k, v in self.problem.items() if k not in _STANDARD}

    def __getattr__(self, name: str) -> Any:
        # Only called for names that are no attribute: the problem's extra members.
        problem = self.__dict__.get("problem") or {}
        if name in problem and name not in _STANDARD:
            return problem[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (problem members: {sorted(problem)})")


class SignatureError(CuzkError):
    """``verify_callback`` refused a callback: its ``Cuzk-Signature`` is malformed, does
    not match the body under the secret, or its timestamp is beyond the tolerance."""


class JobTimeout(CuzkError):
    """``wait_job`` ran out of time before the job was decided; ``job`` is its last state."""

    def __init__(self, job: Dict[str, Any], timeout: float):
        self.job = job
        super().__init__(f"job {job.get('job')} still {job.get('state')} after {timeout:g} s")
