"""Sphinx configuration of the rendered course (``make site``; ``tools/sitebuild.py`` runs it).

The lessons arrive already executed (papermill, in ``tools/sitebuild.py``), so MyST-NB only renders
them: the site shows the outputs and figures a real run produced. Everything the pages need is
served from the site folder itself: no intersphinx, no widget JavaScript from a CDN, no launch or
repository buttons, no remote fonts (``tools/sitebuild.py check`` fails on any remote script, style
sheet or font).
"""

project = "Bureau: multi-agent memory isolation"
author = "the Bureau course"
copyright = "the Bureau course authors"  # noqa: A001 - Sphinx's own name for it

extensions = ["myst_nb"]

# The lessons are executed before the build (tools/sitebuild.py); here they are only read.
nb_execution_mode = "off"
# Widgets cannot run in a static page: tools/sitebuild.py replaces each with its picture, so
# MyST-NB must not add the ipywidgets embed scripts (they load require.js from a CDN).
nb_ipywidgets_js: dict = {}
# Kernel chatter (warnings, "running over TCP") is noise for a reader.
nb_output_stderr = "remove"
nb_merge_streams = True

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

exclude_patterns = ["_build", "_include/**", "**.ipynb_checkpoints"]
# The reference pages name repository files (`bureau/...`) that are not pages of the site.
suppress_warnings = ["myst.xref_missing", "myst.header"]

html_theme = "sphinx_book_theme"
html_title = "Bureau: the course"
html_copy_source = False
html_show_sourcelink = False
# bureau.css: a wider content column, text outputs that wrap, scroll bars that show (issue 34 §8).
html_static_path = ["_static"]
html_css_files = ["bureau.css"]
html_theme_options = {
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "launch_buttons": {},
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
