"""Client of the cuzk HTTP API (cuzk-api): Groth16 proofs of a cuzkd's circuits by name.

    from cuzk_client import Client
    c = Client("http://127.0.0.1:8080", token)      # or CUZK_API_URL, CUZK_API_TOKEN
    r = c.submit("mul", {"x": "7", "k": "1234567"}, wait=60)
    proof = r["proofs"][0]                           # {"k","proof","publicSignals","verified"}
"""
from .client import Client, Inputs, Job, JobPage, Metadata, Proof, RetryHook, Submitted
from .errors import ApiError, CuzkError, JobTimeout, TransportError

__all__ = ["Client", "Inputs", "Job", "JobPage", "Metadata", "Proof", "RetryHook", "Submitted",
           "ApiError", "CuzkError", "JobTimeout", "TransportError"]
__version__ = "0.1.0"
