"""Refuse options that would generate a broken package, before anything is written."""

import keyword
import re
import sys

plugin_name = "{{ cookiecutter.plugin_name }}"
package_name = "{{ cookiecutter.package_name }}"
distribution_name = "{{ cookiecutter.distribution_name }}"
extension_points = "{{ cookiecutter.extension_points }}"
KNOWN = (
    "PreEnqueue PreFilter Filter PostFilter PreScore Score Reserve Permit PreBind Bind PostBind"
).split()

problems = []
if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", plugin_name):
    problems.append(f"plugin_name {plugin_name!r} must be CamelCase letters and digits")
if not package_name.isidentifier() or keyword.iskeyword(package_name):
    problems.append(f"package_name {package_name!r} is not a Python identifier")
if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", distribution_name):
    problems.append(f"distribution_name {distribution_name!r} is not a valid distribution name")
chosen = [p for p in re.split(r"[,\s]+", extension_points.strip()) if p]
by_lower = {k.lower(): k for k in KNOWN}
unknown = [p for p in chosen if p.lower() not in by_lower]
if unknown:
    problems.append(
        f"unknown extension point(s) {', '.join(unknown)}; choose among {', '.join(KNOWN)}"
    )
elif not chosen:
    problems.append("choose at least one extension point")
if problems:
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    sys.exit(1)
