"""The op author's tools: ``python -m vyre_decl.ops`` (list, show, check, laws, new, schema).

They sit above the registry, the reference and the emitter: ``check`` runs known answers and laws
on the reference and assembles templates with ptxas; ``laws --suggest`` finds laws that hold but
are not declared. See docs/ops-format.md.
"""

from .cli import main

__all__ = ["main"]
