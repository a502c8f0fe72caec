"""Mutation scoring: verify the verifier (``envport mutate ENV``).

Known bugs are seeded into a translation automatically (``generate``: AST rewrites of its
source), each applied in place with every import-time copy of what it changes made again
(``apply``), and the hierarchy runs on each mutant (``execute``), lowest layer first, in every
declared mode, with small sizes. A mutant is *killed* by the first layer that fails on it; a
*survivor* passes every layer. A mutant is *equivalent* when it provably computes the same thing
as the original (``equivalence``: the same traced programs in every mode, or a reason shown by
hand); equivalent mutants are excluded from the kill rate (``report``).
"""

from envport.verify.mutation.execute import (
    generate_all,
    run_mutation,
    translation_module,
    translation_modules,
)
from envport.verify.mutation.generate import OPERATORS, Mutant, MutantSource, generate, sample
from envport.verify.mutation.report import MutationReport, render

__all__ = ["OPERATORS", "Mutant", "MutantSource", "MutationReport", "generate", "generate_all",
           "render", "run_mutation", "sample", "translation_module", "translation_modules"]
