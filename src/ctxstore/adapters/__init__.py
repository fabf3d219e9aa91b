"""Drop-in conversation stores for agent frameworks, on any ctxstore storage.

- ``ctxstore.adapters.langchain.CtxstoreChatMessageHistory``: LangChain's
  ``BaseChatMessageHistory`` (``pip install 'ctxstore[langchain]'``);
- ``ctxstore.adapters.agents.CtxstoreSession``: the OpenAI Agents SDK's ``Session``
  (``pip install 'ctxstore[agents]'``).

Nothing here imports a framework: each adapter module does, when it is imported, and
``import ctxstore`` imports neither; a missing framework raises
``ctxstore.errors.MissingExtraError``.  ``call_blocking`` runs any storage call from
synchronous code on the event loop that serves the storage (see loops.py).
"""

from __future__ import annotations

from ctxstore.adapters.loops import call_blocking

__all__ = ["call_blocking"]
