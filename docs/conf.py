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
