"""Sphinx configuration of dpcore's documentation (API reference + user guides).

Build with ``bash scripts/docs.sh`` (or ``python -m sphinx -W --keep-going -b html docs <outdir>``);
``tests/test_docs.py`` builds it with warnings as errors. ``dpcore`` must be importable (the
installed wheel, or ``maturin develop``): the API reference is generated from its numpydoc
docstrings by autosummary into ``docs/api/generated/`` (not committed; rewritten on every build).
"""

from __future__ import annotations

import dpcore

project = "dpcore"
author = "dpcore developers"
copyright = "dpcore developers, Apache-2.0"
release = dpcore.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# autosummary writes one page per public object (docs/api/generated/, git-ignored).
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types
autodoc_member_order = "bysource"

# numpydoc: the autosummary class template lists the members itself.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# MyST: the Markdown guides (docs/privacy.md, docs/ldp.md, docs/choosing.md).
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"dpcore {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}


# ---------------------------------------------------------------------------------------------
# Docstrings often name an object by a re-export (``dpcore.TDDL``, ``dpcore.KernelRelease.save``)
# or by its defining module (``dpcore.kernel_learning.tddl.TDDL``); the reference documents each
# object once, under the public subpackage that exports it. Resolve such names to that page.
# ---------------------------------------------------------------------------------------------
def _resolve_alias(app, env, node, contnode):
    import importlib

    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("dpcore."):
        return None
    parts = target.split(".")
    obj, attrs = None, []
    for i in range(len(parts) - 1, 0, -1):  # longest importable module prefix, then attributes
        try:
            mod = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        obj, attrs = mod, parts[i:]
        break
    if obj is None or not attrs:
        return None
    try:
        head = getattr(obj, attrs[0])
    except AttributeError:
        return None
    canonical = _CANONICAL.get(id(head))
    if canonical is None:
        return None
    new_target = ".".join([canonical] + attrs[1:])
    if new_target == target:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node.get("refdoc"), app.builder, node.get("reftype"), new_target, node,
                               contnode)


def _canonical_names():
    import importlib
    import re
    from pathlib import Path

    names = {}
    for page in sorted((Path(__file__).parent / "api").glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        mod = re.search(r"^\.\. currentmodule:: (\S+)", text, re.M)
        if mod is None:
            continue
        module = importlib.import_module(mod.group(1))
        for block in re.findall(r"\.\. autosummary::\n(?:   :.*\n)*\n((?:   \S.*\n)+)", text):
            for line in block.splitlines():
                name = line.strip()
                names[id(getattr(module, name))] = f"{mod.group(1)}.{name}"
    return names


_CANONICAL = _canonical_names()


def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    """scikit-learn adds ``set_{fit,score,...}_request`` (metadata routing) to every estimator class;
    their docstrings refer to scikit-learn's own glossary. They are documented by scikit-learn."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _public_bases(app, name, obj, options, bases):
    """``show-inheritance`` lists only public bases: a private implementation class (``_GLMPerturbation``,
    ``dpcore._internal.linear.LinearPredictorMixin``, ...) is not documented, so "Bases: _GLMPerturbation" would name a class the reader cannot
    look up. A private base is replaced by its own nearest public bases (recursively), so the page still says
    e.g. "Bases: BaseEstimator" where that is what the class is (``object`` when nothing public is left)."""
    public = []
    for base in bases:
        for b in _public_ancestors(base):
            if b not in public:
                public.append(b)
    bases[:] = public or [object]  # autodoc prints "Bases: " followed by nothing for an empty list


def _is_private(cls):
    """A class whose name, or a component of whose module path, starts with ``_`` (``dpcore._internal.*``)."""
    module = getattr(cls, "__module__", "") or ""
    return cls.__name__.startswith("_") or any(part.startswith("_") for part in module.split("."))


def _public_ancestors(base):
    if base is object or not _is_private(base):
        return [base]
    out = []
    for b in getattr(base, "__bases__", ()):
        if b is object:
            continue
        out.extend(x for x in _public_ancestors(b) if x not in out)
    return out


def setup(app):
    app.connect("missing-reference", _resolve_alias)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)
