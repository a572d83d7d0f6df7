"""Sphinx configuration for pyprog's documentation.

Build it with ``pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html``.
No network is needed: no intersphinx, no external logos or links.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx.util import logging

import pyprog

project = "pyprog"
author = "pyprog developers"
copyright = "2026, pyprog developers"
release = pyprog.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb"]
suppress_warnings = ["myst.header"]  # guides moved from the README start at level 2 in places

# -- the API reference --------------------------------------------------------------------------
# THE list of documented modules, one entry per layer (docs/api/layers/<layer>.rst). After a module
# is split, moved or added, edit this dict only: the build warns (and so fails under -W) about a
# listed module that does not import and about a public module of pyprog that is not listed.
API_MODULES = {
    "forecast": [
        "pyprog.forecast",
        "pyprog.forecast.bases",
        "pyprog.forecast.estimators",
        "pyprog.forecast.forecasters",
        "pyprog.forecast.selection",
        "pyprog.forecast.selected_intervals",
        "pyprog.forecast.misspecification",
        "pyprog.forecast.backtests",
        "pyprog.forecast.blocks",
        "pyprog.forecast.intervals",
        "pyprog.forecast.safety",
        "pyprog.forecast.logged",
        "pyprog.forecast.plot",
    ],
    "value": [
        "pyprog.value",
        "pyprog.value.forecast",
        "pyprog.value.bins",
        "pyprog.value.gather",
        "pyprog.value.candidates",
        "pyprog.value.reml",
        "pyprog.value.averaging",
        "pyprog.value.plot",
        "pyprog.value.learning",
        "pyprog.value.learners",
        "pyprog.value.future_policy",
    ],
    "offpolicy": [
        "pyprog.offpolicy",
        "pyprog.offpolicy.episodes",
        "pyprog.offpolicy.reward_model",
        "pyprog.offpolicy.crossfit",
        "pyprog.offpolicy.chunked",
        "pyprog.offpolicy.estimates",
        "pyprog.offpolicy.future_value",
        "pyprog.offpolicy.support",
    ],
    "timeseries": [
        "pyprog.timeseries",
        "pyprog.timeseries.errors",
        "pyprog.timeseries.features",
        "pyprog.timeseries.terms",
        "pyprog.timeseries.least_squares",
        "pyprog.timeseries.models",
        "pyprog.timeseries.interval_results",
        "pyprog.timeseries.splits",
    ],
    "logs": [
        "pyprog.logs",
        "pyprog.logs.times",
        "pyprog.logs.episodes",
        "pyprog.logs.episodes_csv",
        "pyprog.logs.rounds",
        "pyprog.logs.rounds_csv",
        "pyprog.logs.columns",
        "pyprog.logs.chunks",
        "pyprog.logs.tables",
        "pyprog.logs.streams",
        "pyprog.logs.readers",
        "pyprog.logs.readers.bandit",
        "pyprog.logs.readers.episodes",
        "pyprog.logs.readers.common",
    ],
    "learn": [
        "pyprog.learn.policies.base",
        "pyprog.learn.policies.softmax",
        "pyprog.learn.policies.gaussian",
        "pyprog.learn.optim",
        "pyprog.learn.buffer",
        "pyprog.learn.learners",
        "pyprog.learn.hyperparams",
    ],
    "envs": [
        "pyprog.envs",
        "pyprog.envs.registry",
        "pyprog.envs.reco",
        "pyprog.envs.reacher",
        "pyprog.envs.diabetes",
        "pyprog.envs.diabetes.parameters",
        "pyprog.envs.diabetes.model",
        "pyprog.envs.diabetes.dopri5",
        "pyprog.envs.diabetes.patient",
        "pyprog.envs.diabetes.day",
        "pyprog.envs.diabetes.env",
    ],
    "runner": [
        "pyprog.runner.adapter",
        "pyprog.runner.checks",
        "pyprog.runner.loop",
        "pyprog.runner.replay",
        "pyprog.runner.parallel",
    ],
    "results": [
        "pyprog.results",
        "pyprog.results.keys",
        "pyprog.results.schema",
        "pyprog.results.rows",
        "pyprog.results.store",
        "pyprog.results.export",
    ],
    "stats": ["pyprog.stats.summary", "pyprog.stats.tables", "pyprog.stats.verdicts"],
    "experiments": [
        "pyprog.experiments.runs",
        "pyprog.experiments.grid",
        "pyprog.experiments.sweep",
    ],
    "paper": [
        "pyprog.paper.protocols",
        "pyprog.paper.claims",
        "pyprog.paper.diabetes",
        "pyprog.paper.report",
        "pyprog.paper.figures",
        "pyprog.paper.drawing",
        "pyprog.paper.reproduce",
    ],
    "cli": [
        "pyprog.cli.main",
        "pyprog.cli.common",
        "pyprog.cli.info",
        "pyprog.cli.run",
        "pyprog.cli.sweep",
        "pyprog.cli.best",
        "pyprog.cli.reproduce",
        "pyprog.cli.forecast",
        "pyprog.cli.learn",
    ],
    "utils": [
        "pyprog.utils.validation",
        "pyprog.utils.cache",
        "pyprog.utils.bounded_cache",
        "pyprog.utils.figures",
        "pyprog.utils.machine",
        "pyprog.utils.moved",
        "pyprog.utils.lazy",
    ],
    "_ext": [
        "pyprog._ext.backend",
        "pyprog._ext.fallback",
        "pyprog._ext.fallback_bootstrap",
        "pyprog._ext.fallback_reml",
    ],
}

# The old paths of moved modules (pyprog.utils.moved): they warn on use and are not documented.
OLD_PATHS = {
    f"pyprog.{path}"
    for path in (
        "forecast.arrays", "forecast.logs", "forecast.log_columns", "forecast.rounds_csv",
        "forecast.value", "forecast.readers.bandit", "forecast.readers.episodes",
        "forecast.readers.common", "offpolicy.rounds", "offpolicy.time_features",
        "offpolicy.time_terms", "offpolicy.time_models", "offpolicy.time_candidates",
        "offpolicy.future", "forecast.misfit", "forecast.post_selection", "utils.memo",
    )
}  # fmt: skip

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_mock_imports = ["ns_gym"]

numpydoc_show_class_members = (
    False  # autodoc lists the members; numpydoc's tables would repeat them
)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

myst_enable_extensions = ["dollarmath", "colon_fence", "attrs_inline"]
myst_heading_anchors = 3

# -- the gallery --------------------------------------------------------------------------------
# Only examples named plot_*.py are executed (each takes seconds); the others (NS-Gym's, which
# needs the ns-gym package) are shown with the figure committed beside them.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "reference_url": {},
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
}

# -- HTML ---------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"pyprog {release}"
html_static_path = ["_static"]
html_css_files = ["pyprog.css"]
html_theme_options = {
    "navbar_start": ["navbar-logo"],
    "logo": {"text": f"pyprog {version}"},
    "navbar_end": ["theme-switcher"],
    "navbar_persistent": ["search-button"],
    "icon_links": [],
    "use_edit_page_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "auto_examples/index": []}
html_show_sourcelink = False

logger = logging.getLogger(__name__)


class PyprogLayer(Directive):
    """``.. pyprog-layer:: forecast``: one ``automodule`` per module listed in API_MODULES."""

    required_arguments = 1
    has_content = False
    option_spec: ClassVar[dict] = {}

    def run(self):
        layer = self.arguments[0]
        if layer not in API_MODULES:
            raise self.error(f"unknown layer {layer!r}: add it to API_MODULES in docs/conf.py")
        lines = []
        for name in API_MODULES[layer]:
            lines += [name, "-" * len(name), "", f".. automodule:: {name}"]
            public = _public_names(name)
            if public:
                # documented once, under their top-level name
                lines += [f"   :exclude-members: {', '.join(public)}", ""]
                refs = ", ".join(f":py:obj:`pyprog.{n}`" for n in public)
                lines += [f"Also defined here, documented in the public API: {refs}."]
            lines += [""]
        source = self.state_machine.input_lines.source(
            self.lineno - self.state_machine.input_offset - 1
        )
        self.state_machine.insert_input(lines, source)
        return []


def _public_names(module_name):
    """The names of ``pyprog.__all__`` that are defined in module ``module_name``."""
    module = importlib.import_module(module_name)
    return sorted(
        name
        for name in pyprog.__all__
        if not name.startswith("__")
        and name in vars(module)
        # a package's re-exports of its own modules' names count as its own
        and getattr(vars(module)[name], "__module__", module_name).startswith(module_name)
        and vars(module)[name] is getattr(pyprog, name)
    )


def _skip_type_aliases(app, what, name, obj, skip, options):
    """Skip type aliases such as ``tuple[str, int]``: autodoc cannot format their signature."""
    if isinstance(obj, types.GenericAlias):
        return True
    return None


def _check_module_list(app, config):
    """Warn about a listed module that does not import and a public module that is not listed."""
    listed = {name for names in API_MODULES.values() for name in names}
    for name in sorted(listed):
        try:
            importlib.import_module(name)
        except Exception as err:  # the warning names the fix
            logger.warning(
                "API_MODULES in docs/conf.py lists %s, which does not import (%s): update the list",
                name,
                err,
            )
    for info in pkgutil.walk_packages(pyprog.__path__, "pyprog."):
        parts = info.name.split(".")
        if any(part.startswith("_") for part in parts[1:]) and parts[1] != "_ext":
            continue
        if parts[-1].startswith("_") or info.name in listed or info.ispkg:
            continue
        if info.name in OLD_PATHS:
            continue
        logger.warning(
            "module %s is not in API_MODULES in docs/conf.py: add it to its layer's list",
            info.name,
        )


_CALL = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(\(.*\))?$", re.S)


def _link_api_names(app, doctree, docname):
    """In the guides, an inline literal that names a documented object links to its entry.

    ``pyprog.learn.learners.Learner``, ``forecast_logs``, ``Hyper(basis="auto")``: a full
    ``pyprog.`` path, or a name of ``pyprog.__all__`` (``run`` only as a call, ``run(...)``:
    alone it is usually the ``pyprog run`` command). Written in the guides as plain code, so
    they read the same on GitHub.
    """
    if not docname.startswith("guides/"):
        return
    objects = app.env.get_domain("py").objects
    for node in list(doctree.findall(nodes.literal)):
        if isinstance(node.parent, nodes.reference):
            continue
        match = _CALL.match(node.astext().strip())
        if match is None:
            continue
        name, called = match["name"], match.group(2) is not None
        if not name.startswith("pyprog."):
            if name not in pyprog.__all__ or (name == "run" and not called):
                continue
            name = f"pyprog.{name}"
        entry = objects.get(name)
        if entry is None:
            continue
        uri = f"{app.builder.get_relative_uri(docname, entry.docname)}#{entry.node_id}"
        ref = nodes.reference("", "", internal=True, refuri=uri, reftitle=name)
        ref += node.deepcopy()
        node.replace_self(ref)


def setup(app):
    app.connect("doctree-resolved", _link_api_names)
    directives.register_directive("pyprog-layer", PyprogLayer)
    app.connect("config-inited", _check_module_list)
    app.connect("autodoc-skip-member", _skip_type_aliases)
