"""`kgen tune`: the fastest legal configuration of a spec's matmul under the performance model.

candidate.py  one candidate (TuneConfig), the spec's tile counts, what evaluating a candidate gave
space.py      which values a spec leaves open, the tensors' placement, the winner as a spec
search.py     the groups, their lower bounds, the pruned search and the ranking
engines.py    where the jobs run: a pool of forked workers for the search, local or Ray for verification
verify.py     the verification job of a winner: the chain after rendering
precision.py  the predicted error of a candidate (--allow-precision)
"""

from kgen.perf.tune.candidate import Outcome, Scored, TuneConfig, tiles
from kgen.perf.tune.engines import CandidatePool, Engine, cluster_runtime_env, require_ray
from kgen.perf.tune.precision import predicted_error
from kgen.perf.tune.search import Estimator, SearchStats, TuneResult, model_estimator, tune
from kgen.perf.tune.space import (DATAFLOWS, DEFAULT_BUDGET, FIDELITIES, ONE_D, SPACES, Space, TuneError,
                                  candidate_of, model_digest, search_space, spec_text, target_of, tuned_spec,
                                  with_placement)
from kgen.perf.tune.verify import EXACT_MAX_MACS, verify_numerics, verify_spec_text

__all__ = ["CandidatePool", "Engine", "cluster_runtime_env", "require_ray", "predicted_error", "Estimator", "Outcome", "Scored",
           "SearchStats", "TuneResult", "model_estimator", "tune", "DATAFLOWS", "DEFAULT_BUDGET", "FIDELITIES",
           "ONE_D", "SPACES", "TuneConfig", "Space", "TuneError", "candidate_of", "model_digest", "search_space",
           "spec_text", "target_of", "tiles", "tuned_spec", "with_placement", "EXACT_MAX_MACS",
           "verify_numerics", "verify_spec_text"]
