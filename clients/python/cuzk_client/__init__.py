"""Client of the cuzk HTTP API (cuzk-api): Groth16 proofs of a cuzkd's circuits by name.

    from cuzk_client import Client
    c = Client("http://127.0.0.1:8080", token)      # or CUZK_API_URL, CUZK_API_TOKEN
    r = c.submit("mul", {"x": "7", "k": "1234567"}, wait=60)
    proof = r["proofs"][0]                           # {"k","proof","publicSignals","verified"}
    for ev in c.events(r["job"]): ...                # the job's Server-Sent Events, to its end
    doc = verify_callback(secret, request.headers["Cuzk-Signature"], request.body)  # a callback
"""
from .client import Client, Event, Inputs, Job, JobPage, Metadata, Proof, RetryHook, Submitted, verify_callback
from .errors import ApiError, CuzkError, JobTimeout, SignatureError, TransportError

__all__ = ["Client", "Event", "Inputs", "Job", "JobPage", "Metadata", "Proof", "RetryHook", "Submitted",
           "verify_callback", "ApiError", "CuzkError", "JobTimeout", "SignatureError", "TransportError"]
__version__ = "0.1.0"
