"""Stochastic policies with analytic gradients (paper §8; SPEC §4).

Three policies share one interface:

* :class:`SoftmaxLinear` — ``π(·|s) = softmax(W s + b)`` (NS-Reco);
* :class:`SoftmaxMLP` — ``π(·|s) = softmax(W2 tanh(W1 s + b1) + b2)`` (NS-Reacher);
* :class:`GaussianPolicy` — ``a ~ N(low + sigmoid(W s + b)(high − low), diag(std²))``
  (NS-Diabetes).

All parameters of a policy live in ONE flat float64 vector ``policy.theta`` of shape
``(P,)``; the named weights (``W``, ``b``, ``W1``, ...) are views into it, so an
optimiser that updates ``theta`` in place updates the policy.

The learners' hot path is ``evaluate`` then ``backward``::

    ev = policy.evaluate(obs, actions, check=False)          # (M, obs_dim), (M,)
    grad = policy.backward(ev, coef_log_prob=c, coef_entropy=e)
    # grad = Σ_m c[m] ∇θ log π(a_m|s_m) + Σ_m e[m] ∇θ H(π(·|s_m)),  shape (P,)

``backward`` is the vector–Jacobian product, computed from the cache that
``evaluate`` keeps (no autodiff). In a loop, pass the previous result back as
``evaluate(..., out=ev)``: its arrays are then reused, and the hot path allocates
no (M, n_actions) or (M, hidden) array (fresh multi-megabyte arrays cost more in page
faults than the arithmetic). Policies keep small work buffers for ``sample``, so one policy object
must not be shared between threads.
"""

from pyprog.learn.policies.base import Policy, PolicyEval
from pyprog.learn.policies.gaussian import GaussianEval, GaussianPolicy
from pyprog.learn.policies.softmax import SoftmaxEval, SoftmaxLinear, SoftmaxMLP

__all__ = [
    "GaussianEval",
    "GaussianPolicy",
    "Policy",
    "PolicyEval",
    "SoftmaxEval",
    "SoftmaxLinear",
    "SoftmaxMLP",
]
