"""mkdocs hooks: add the generated reference pages, and list every plugin page in the nav."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).parent))

import reference

PLUGINS_SECTION = "Plugins"


def on_config(config):
    """Fill the "Plugins" section of the nav with every ``docs/plugins/*.md``, sorted, so
    that a new plugin's page needs no edit of mkdocs.yml."""
    docs = Path(config["docs_dir"])
    pages = [{p.stem: f"plugins/{p.name}"} for p in sorted((docs / "plugins").glob("*.md"))]
    for item in config["nav"] or []:
        if isinstance(item, dict) and PLUGINS_SECTION in item:
            item[PLUGINS_SECTION] = pages
    return config


def on_files(files, config):
    """Add the configuration, hookspec and SDK references, generated from the code."""
    for page, render in reference.PAGES.items():
        files.append(File.generated(config, page, content=render()))
    return files
